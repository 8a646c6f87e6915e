"""`aotwheel resolve`'s start-up (issue 40's CLI budget): a person's resolve of the default list
(pvc,ats-m150) or of ``pvc`` imports what its path needs and nothing else, checked by module
(never by a wall-clock limit: the times are benchmarks/cli_startup.py's). Each check runs the
real command in a subprocess and reads its ``sys.modules`` when it returns; the modules plain
Python had loaded already (site, .pth files) are not counted. Controls show each check can fail:
another vendor's token does load that vendor's grammar, an uncached ocloc table does run ocloc."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_SHOW = "sys.stderr.write('\\n' + repr(sorted(sys.modules)))\n"

# What a person's `aotwheel resolve` (pvc, acm-g10: Intel products of the catalog) never needs:
# another vendor's grammar, the verdict and binary models (no verdict is made, no binary read),
# the ocloc query and the modules that run or find tools (the installed ocloc's table comes from
# the cache), and what only a bad character, an option list or --json needs.
NOT_NEEDED = {
    "aotwheel.backends.nvidia.targets", "aotwheel.backends.amd.targets",
    "aotwheel.results", "aotwheel.acceptable", "aotwheel.model", "aotwheel.backends.readspec", "aotwheel.formats.sniff",
    "aotwheel.backends.intel.ocloc_query", "aotwheel.backends.intel.buildsteps.toolchain", "aotwheel.buildsteps.cache",
    "subprocess", "tempfile", "shutil", "pathlib", "hashlib", "shlex", "unicodedata",
}


def _env(cache: Path) -> dict[str, str]:
    """A clean environment (no USE_AOT_* or TORCH_XPU_ARCH_LIST: the default list), this tree's
    aotwheel first when ``$PYTHONPATH`` names one, and ``cache`` as the device-code cache."""
    tree = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AOTWHEEL_JIT": "ignore", "AOTWHEEL_CACHE_DIR": str(cache), **tree}


def _modules(code: str, *argv: str, env: dict[str, str]) -> tuple[set[str], str]:
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO / "tests", env=env,
                          timeout=120, check=True)
    *out, last = proc.stderr.splitlines()
    return set(ast.literal_eval(last)), proc.stdout  # a list of module names printed by repr()


def _resolve(*argv: str, env: dict[str, str]) -> tuple[set[str], str]:
    """The modules ``aotwheel resolve ARGV`` has loaded beyond plain Python's, and its output."""
    base, _ = _modules("import sys\n" + _SHOW, env=env)
    code = "import sys\nfrom aotwheel.cli import main\nrc = main(['resolve', *sys.argv[1:]])\n" + _SHOW + "sys.exit(rc)\n"
    loaded, out = _modules(code, *argv, env=env)
    return loaded - base, out


@pytest.mark.parametrize("argv", [(), ("pvc",)])
def test_a_persons_resolve_imports_only_what_its_path_needs(tmp_path: Path, argv: tuple[str, ...]) -> None:
    env = _env(tmp_path)
    _resolve(*argv, env=env)  # where an ocloc is installed, its table is asked once and cached
    loaded, out = _resolve(*argv, env=env)
    # It did a person's resolve: the grammar, the installed ocloc's view, the coverage plan.
    assert {"aotwheel.devlist", "aotwheel.backends.intel.catalog", "aotwheel.backends.intel.coverage"} <= loaded, sorted(loaded)
    assert "native coverage" in out and ("acm-g10" in out) == (not argv), out
    assert not NOT_NEEDED & loaded, sorted(NOT_NEEDED & loaded)


def test_a_token_of_another_vendor_loads_that_vendors_grammar(tmp_path: Path) -> None:
    # The control of the check above: the modules it must not see do load where a list needs them.
    env = _env(tmp_path)
    nvidia, _ = _resolve("pvc,sm_90", env=env)
    amd, _ = _resolve("pvc,gfx90a", env=env)
    assert "aotwheel.backends.nvidia.targets" in nvidia and "aotwheel.backends.amd.targets" not in nvidia
    assert "aotwheel.backends.amd.targets" in amd  # (NVIDIA's is asked first whether gfx90a is its own)
    json_run, out = _resolve("pvc", "--json", env=env)
    assert "json" in json_run and out.lstrip().startswith("{")


def test_an_uncached_ocloc_table_is_asked_of_ocloc(tmp_path: Path) -> None:
    # The control of "no subprocess once cached": with an empty cache the installed ocloc is run.
    if shutil.which("ocloc") is None:
        pytest.skip("no ocloc on PATH: the catalog answers alone, nothing is asked or cached")
    loaded, _ = _resolve("pvc", env=_env(tmp_path))
    assert {"subprocess", "aotwheel.backends.intel.ocloc_query"} <= loaded, sorted(loaded)
    assert list((tmp_path / "v2" / "tools").glob("*.json")), "the table was not cached"


def test_the_light_reader_reads_the_file_the_cache_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # toolfacts names a tool's facts file with the built-in sha256, not hashlib's: the same name
    # (caches written before it are still found) and the same facts the cache object reads.
    import hashlib

    from aotwheel.buildsteps.cache import DeviceCodeCache
    from aotwheel.buildsteps.toolfacts import facts_name, read_facts

    tool = tmp_path / "tool"
    tool.write_bytes(b"\x7fELF not really")
    st = tool.stat()
    ident = f"{os.path.realpath(tool)}\0{st.st_size}\0{st.st_mtime_ns}"
    assert facts_name(str(tool)) == hashlib.sha256(ident.encode()).hexdigest() + ".json"
    monkeypatch.setenv("AOTWHEEL_CACHE_DIR", str(tmp_path / "cache"))
    assert read_facts(str(tool)) is None
    DeviceCodeCache.from_env().store_tool_facts(str(tool), {"version": "1.2", "device_table": {"schema": 1}})
    assert read_facts(str(tool)) == DeviceCodeCache.from_env().tool_facts(str(tool)) == {"version": "1.2", "device_table": {"schema": 1}}
    monkeypatch.setenv("AOTWHEEL_CACHE_DIR", "off")
    assert read_facts(str(tool)) is None
