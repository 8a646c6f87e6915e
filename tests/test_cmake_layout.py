"""The CMake files by vendor: a core, cmake/aotwheel-config.cmake, that names no vendor, and one file
per vendor build (aotwheel-<name>.cmake, registered with ``_aotwheel_register_vendor(<vendor>)``)
that names no other vendor: neither its words (test_layering's ``VENDOR_WORD``) nor its functions.

Read from the files (comments included: a comment naming another vendor is a coupling too), and
through real CMake (``cmake -P``): the core includes every vendor file beside it, a new one too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_layering import VENDOR_WORD, VENDORS

REPO = Path(__file__).resolve().parents[1]
CMAKE = REPO / "cmake"
CORE = CMAKE / "aotwheel-config.cmake"

# Each alternative of test_layering's VENDOR_WORD, and the vendor whose word it is.
WORD_VENDOR = {
    r"\bptx\b": "nvidia", r"\bintel\b": "intel", r"\bnvidia\b": "nvidia", r"\bamd\b": "amd", r"\bcuda\b": "nvidia",
    r"\bhip\b": "amd", r"\bsm_\d": "nvidia", r"\bsm_\b": "nvidia", r"compute_\d": "nvidia", r"nv_fatbin": "nvidia",
    r"zebin": "intel", r"ocloc": "intel", r"spir64_gen": "intel", r"\bgfx\d": "amd", r"nvptx": "nvidia", r"cubin": "nvidia",
    r"\bpvc\b": "intel", r"levelzero": "intel", r"level zero": "intel",
}
_DEFINITION = re.compile(r"^\s*(?:function|macro)\(\s*([A-Za-z_][A-Za-z0-9_]*)", re.M | re.I)
_REGISTER = re.compile(r"^\s*_aotwheel_register_vendor\(\s*([a-z][a-z0-9_]*)", re.M)
_NEEDS_CMAKE = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")


def _vendors_named(text: str) -> dict[str, set[str]]:
    """Vendor -> the words of it in ``text``, also inside identifiers (``_aotwheel_cuda_targets``,
    ``AOTWHEEL_IMAGES_nvidia``, ``nvidia_gpu_sm_90``: '_' separates words there)."""
    found: dict[str, set[str]] = {}
    for spelling in (text, text.replace("_", " ")):
        for pattern, vendor in WORD_VENDOR.items():
            for m in re.finditer(pattern, spelling, re.I):
                found.setdefault(vendor, set()).add(m.group(0).lower())
    return found


def _vendor_files() -> dict[Path, str]:
    """Every CMake file but the core, and the one vendor it registers."""
    files: dict[Path, str] = {}
    for path in sorted(CMAKE.glob("*.cmake")):
        if path == CORE:
            continue
        registered = set(_REGISTER.findall(path.read_text(encoding="utf-8")))
        assert len(registered) == 1, f"{path.name} registers {sorted(registered) or 'no vendor'}: one _aotwheel_register_vendor(<vendor>)"
        files[path] = registered.pop()
    return files


def _defined(path: Path) -> set[str]:
    return set(_DEFINITION.findall(path.read_text(encoding="utf-8")))


def _calls(text: str, names: set[str]) -> set[str]:
    return {n for n in names if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", text)}


def test_every_vendor_word_of_the_layering_test_has_its_vendor() -> None:
    # A word added to VENDOR_WORD must say whose it is here, or the checks below would miss it.
    assert set(VENDOR_WORD.pattern.split("|")) == set(WORD_VENDOR)
    assert set(WORD_VENDOR.values()) == set(VENDORS)


def test_the_word_check_finds_words_inside_identifiers() -> None:
    # The checks below are only as good as this: CMake names are words joined by '_'.
    assert _vendors_named("_aotwheel_cuda_targets AOTWHEEL_IMAGES_nvidia") == {"nvidia": {"cuda", "nvidia"}}
    assert _vendors_named("-fsycl-targets=spir64_gen,nvidia_gpu_sm_90") == {"intel": {"spir64_gen"}, "nvidia": {"nvidia"}}
    assert _vendors_named("include(aotwheel-intel.cmake) # gfx90a") == {"intel": {"intel"}, "amd": {"gfx9"}}
    assert _vendors_named("_aotwheel_register_vendor(${vendor}) the shipping chips") == {}


def test_the_core_names_no_vendor() -> None:
    text = CORE.read_text(encoding="utf-8")
    assert _vendors_named(text) == {}
    # ... and calls no vendor's function: it reaches the vendors through the registry alone.
    vendor_functions = set().union(*(_defined(p) for p in _vendor_files()))
    assert _calls(text, vendor_functions) == set()


def test_each_vendor_file_names_no_other_vendor() -> None:
    files = _vendor_files()
    from aotwheel import backends

    assert set(files.values()) <= set(backends.names())  # the manifest step's --records <vendor>=... takes backend names
    named = {p.name: {v: sorted(w) for v, w in _vendors_named(p.read_text(encoding="utf-8")).items() if v != files[p]} for p in files}
    assert {name: words for name, words in named.items() if words} == {}


def test_no_vendor_file_calls_another_vendors_function() -> None:
    files = _vendor_files()
    defined = {p: _defined(p) for p in files}
    clashes = [(p.name, q.name, sorted(defined[p] & defined[q])) for p in files for q in files if p < q and defined[p] & defined[q]]
    assert clashes == []  # one definition per function: a second file's would silently win
    crossing = {p.name: sorted(_calls(p.read_text(encoding="utf-8"), set().union(*(defined[q] for q in files if files[q] != files[p]))))
                for p in files}
    assert {name: calls for name, calls in crossing.items() if calls} == {}


def _cmake_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _run_script(tmp_path: Path, body: str, cmake_dir: Path = CMAKE) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "probe.cmake"
    script.write_text(f"set(Python_EXECUTABLE {_cmake_quote(sys.executable)})\n"
                      f"include({_cmake_quote(str(cmake_dir / 'aotwheel-config.cmake'))})\n" + body)
    return subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)


@_NEEDS_CMAKE
def test_the_core_includes_every_vendor_file_and_a_new_one_without_an_edit(tmp_path: Path) -> None:
    body = 'get_property(v GLOBAL PROPERTY AOTWHEEL_VENDORS)\nmessage("VENDORS|${v}")\n'
    proc = _run_script(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    said = [line.split("|")[1].split(";") for line in proc.stderr.splitlines() if line.startswith("VENDORS|")]
    assert len(said) == 1 and sorted(said[0]) == sorted(set(_vendor_files().values()))
    # A copy of the CMake files plus one new vendor file: the core, unchanged, includes it.
    copy = tmp_path / "cmake"
    shutil.copytree(CMAKE, copy)
    (copy / "aotwheel-zz.cmake").write_text(
        "include_guard(GLOBAL)\n_aotwheel_register_vendor(zz WORDS \"ZZ chips\" CALLS \"aotwheel_add_zz_device_code()\")\n"
        "function(aotwheel_add_zz_device_code)\nendfunction()\n")
    body += ('get_property(c GLOBAL PROPERTY _AOTWHEEL_VENDOR_CALLS_zz)\nmessage("CALLS|${c}")\n'
             'if(COMMAND aotwheel_add_zz_device_code)\n  message("DEFINED")\nendif()\n')
    proc = _run_script(tmp_path, body, copy)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    said = [line.split("|")[1].split(";") for line in lines if line.startswith("VENDORS|")]
    assert len(said) == 1 and sorted(said[0]) == sorted({*_vendor_files().values(), "zz"})
    assert "CALLS|aotwheel_add_zz_device_code()" in lines and "DEFINED" in lines


@_NEEDS_CMAKE
def test_the_documented_resolver_variables_are_set(tmp_path: Path) -> None:
    # README's list of what aotwheel_resolve_devlist(<out>) sets: every name is set for a mixed list,
    # whichever file (the core, a vendor's) the value comes through.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("aotwheel_resolve_devlist(<out>"):]
    section = section[: section.index("\n\n")]
    names = sorted(set(re.findall(r"`<out>(_[A-Z0-9_]+)?`", section)) - {"_FIELD_"})
    assert len(names) >= 12 and "" in names and "_CUDA" in names and "_OCLOC_DEVICE" in names
    body = "aotwheel_resolve_devlist(dl DEVLIST pvc,sm_90)\n" + "".join(
        f'if(DEFINED dl{n})\n  message("SET|dl{n}|${{dl{n}}}")\nelse()\n  message("UNSET|dl{n}")\nendif()\n' for n in names)
    proc = _run_script(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("UNSET|")] == []
    said = dict(line.split("|")[1:] for line in proc.stderr.splitlines() if line.startswith("SET|"))
    assert (said["dl"], said["dl_CUDA"], said["dl_CUDA_ARCHITECTURES"], said["dl_VENDORS"]) == ("pvc", "sm_90", "90-real", "intel;nvidia")


def test_each_vendor_keeps_its_own_cmake_variables() -> None:
    # aotwheel_resolve_devlist sets <out>_<KEY> for every vendor's keys: two vendors with one key would
    # overwrite each other's value, and a key of the core's would be overwritten.
    import json

    out = subprocess.run([sys.executable, "-m", "aotwheel", "resolve", "--json", "pvc,sm_90"], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    sections = json.loads(out)["cmake"]
    keys = [k for section in sections.values() for k in section]
    core = {"JIT_FALLBACK", "SYCL_TARGETS", "SYCL_VENDORS", "VENDORS", "JIT_SUMMARY", "JSON"}
    assert len(keys) == len(set(keys)) and not set(keys) & core
    assert all(re.fullmatch(r"[A-Z0-9_]*", k) for k in keys)


def test_cmake_reads_only_declared_variables() -> None:
    # What the CMake files read from the environment or as a USE_AOT_* / AOTWHEEL_* variable is
    # declared (aotwheel.variables / a backend's variables module), so the typo check knows it.
    from aotwheel.config import all_variables
    from aotwheel.variables import OTHER_NAMES

    declared = {v.name for v in (*all_variables(), *OTHER_NAMES)}
    read: set[str] = set()
    for path in CMAKE.glob("*.cmake"):
        text = path.read_text(encoding="utf-8")
        read |= set(re.findall(r"\bENV\{([A-Z][A-Z0-9_]*)\}", text))
        read |= set(re.findall(r"(?:\bDEFINED |\$\{)((?:USE_AOT|AOTWHEEL)_[A-Z0-9_]+)\b", text))
        for items in re.findall(r"foreach\(\w+ IN ITEMS ([^)]*)\)", text):  # names read as ${${var}}
            read |= {w for w in items.split() if re.fullmatch(r"(?:USE_AOT|AOTWHEEL)_[A-Z0-9_]+", w)}
    assert {"AOTWHEEL_ALLOW_UNBUILT", "MAX_JOBS", "AOTWHEEL_REMOTE_CACHE", "USE_AOT_DEVLIST"} <= read
    assert sorted(read - declared) == []
