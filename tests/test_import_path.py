"""`import aotwheel` and a package's generated `_aot.py` stay at a few milliseconds because they
import nothing but themselves: no typing, dataclasses, re, json, functools or importlib (the
modules that made `import aotwheel` cost 15 ms; user packages import `_aot.py` when they are
imported). A command imports its own module, not the others'. Checked by module, never by a
wall-clock limit: the times are benchmarks/cli_startup.py's (issue 40's budget: `import aotwheel`
within 5 ms of `python -c pass`, each command within 4 times it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aotwheel import hook

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("typing", "dataclasses", "re", "json", "functools", "importlib", "importlib.util", "enum", "warnings")


def _new_modules(statement: str, *paths: Path) -> list[str]:
    """Modules that ``statement`` loads in a bare interpreter (-S -I: no site, no environment)."""
    code = (
        "import sys\n"
        f"sys.path[:0] = {[str(p) for p in paths]!r}\n"
        "before = set(sys.modules)\n"
        f"{statement}\n"
        "after = sorted(set(sys.modules) - before)\n"
        "sys.stdout.write(repr(after))\n"
    )
    out = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    return eval(out)  # a list of module names printed by repr()


def test_import_aotwheel_loads_only_aotwheel():
    loaded = _new_modules("import aotwheel", REPO / "python")
    assert loaded == ["aotwheel"], loaded


def test_generated_aot_module_loads_only_itself(tmp_path):
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_aot.py").write_text(hook.render("_kernels", "demo"))
    loaded = _new_modules("import demo._aot", tmp_path, REPO / "python")
    assert set(loaded) == {"demo", "demo._aot"}, loaded
    assert not set(loaded) & set(HEAVY)


def test_lazy_attributes_still_resolve():
    code = "import aotwheel, json; print(json.dumps([aotwheel.resolve.__module__, aotwheel.Verdict.__name__, aotwheel.__version__]))"
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO / 'python')!r}); {code}"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)[:2] == ["aotwheel.devlist", "Verdict"]


def test_build_steps_run_as_a_file_put_their_aotwheel_first_and_keep_pythonpath(tmp_path):
    # CMake's edges run <aotwheel>/buildsteps/__main__.py: that aotwheel first, PYTHONPATH after it,
    # also with PYTHONSAFEPATH (where Python puts no script folder first for the step to replace).
    record = tmp_path / "path.json"
    (tmp_path / "sitecustomize.py").write_text(
        f"import atexit, json, sys\natexit.register(lambda: open({str(record)!r}, 'w').write(json.dumps(sys.path)))\n")
    for safe in ("", "1"):
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "AOTWHEEL_CACHE_DIR": "off",
               **({"PYTHONSAFEPATH": safe} if safe else {})}
        subprocess.run([sys.executable, str(REPO / "python" / "aotwheel" / "buildsteps" / "__main__.py"), "cache"],
                       env=env, capture_output=True, check=True)
        assert json.loads(record.read_text())[:2] == [str(REPO / "python"), str(tmp_path)], safe


def test_build_steps_import_only_what_a_cache_hit_needs():
    # Each spirv/ocloc edge is a process of its own that mostly fetches from the caches: no
    # subprocess, tempfile or shutil (only a compile needs them), no backend object or its protocol
    # (model, config: the steps live in the vendor's package, whose parents must stay empty of
    # them), and no http.client at all (HttpStore speaks HTTP on the socket module).
    unwanted = {"subprocess", "tempfile", "shutil", "http.client",
                "aotwheel.backends.protocol", "aotwheel.backends.capabilities", "aotwheel.backends.intel.backend", "aotwheel.model", "aotwheel.config"}
    spirv = _new_modules("import aotwheel.backends.intel.buildsteps.spvcache, aotwheel.buildsteps.tiers, aotwheel.buildsteps.remote",
                         REPO / "python")
    assert not unwanted & set(spirv), sorted(unwanted & set(spirv))
    ocloc = _new_modules("import aotwheel.backends.intel.buildsteps.ocloc_job, aotwheel.buildsteps.remote, aotwheel.backends.intel.buildsteps.fatbin, "
                         "aotwheel.buildsteps.manifest", REPO / "python")
    assert not unwanted & set(ocloc), sorted(unwanted & set(ocloc))


def test_a_plan_edge_reads_its_entry_without_the_plan_module(tmp_path):
    # The plan is frozen dataclasses where configure writes it (buildsteps/plan.py); an edge reads
    # its entry as plain JSON, through the step dispatcher and the vendor's step module.
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"schema": 1, "edges": [{"id": "a.sm_90", "data": {}}]}))
    statement = ("import aotwheel.buildsteps.__main__ as m, aotwheel.backends.intel.buildsteps.steps, aotwheel.backends.nvidia.buildsteps\n"
                 "from aotwheel.buildsteps.edge import load_edge\n"
                 f"assert load_edge({str(plan)!r}, 'a.sm_90')[1]['id'] == 'a.sm_90'")
    loaded = set(_new_modules(statement, REPO / "python"))
    assert not loaded & {"aotwheel.buildsteps.plan", "aotwheel.model", "aotwheel.config", "aotwheel.backends.protocol",
                         "aotwheel.backends.capabilities"}, sorted(loaded)


def test_a_build_step_parses_its_arguments_without_shutil_or_the_other_steps_parsers():
    # argparse's help formatter imports shutil (to ask the terminal's width) unless given a width,
    # and building all nine steps' parsers was most of the argument parsing of every edge.
    code = ("import json, sys; import aotwheel.backends.intel.buildsteps.steps as m; "
            "p = m.build_parser('ocloc'); a = p.parse_args(['ocloc', '--toolchain', 't', '--spirv', 's', '--job', 'pvc=12.60.7=o']); "
            "print(json.dumps(['shutil' in sys.modules, sorted(p._subparsers._group_actions[0].choices), a.job]))")
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO / 'python')!r}); {code}"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [False, ["ocloc"], ["pvc=12.60.7=o"]]


def _cli_modules(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """Modules an ``aotwheel`` command (the installed one, or the tree ``$PYTHONPATH`` names) has
    loaded when it returns; ``env``: more variables."""
    code = ("import sys\nfrom aotwheel.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('\\n' + repr(sorted(sys.modules)))\n")
    tree = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO / "tests",
                          env={"PATH": "/usr/bin:/bin", "AOTWHEEL_JIT": "ignore", **tree, **(env or {})}, check=True)
    return set(eval(proc.stderr.splitlines()[-1]))  # a list of module names printed by repr()


SMALL_LIB = REPO / "tests" / "data" / "cuda-h100" / "libkern_sm_90.so"
OTHER_COMMANDS = {"aotwheel.cli.resolve", "aotwheel.cli.inspect", "aotwheel.cli.check", "aotwheel.cli.build", "aotwheel.cli.variant",
                  "aotwheel.backends.intel.commands"}


def test_each_command_imports_only_its_own_module():
    # The resolver's grammar and catalog (aotwheel.devlist: importlib.resources, the catalog JSON)
    # used to load for every command because every command module was imported to build --help.
    inspect = _cli_modules("inspect", str(SMALL_LIB))
    assert "aotwheel.inspector" in inspect and not (OTHER_COMMANDS - {"aotwheel.cli.inspect"}) & inspect
    assert not {"aotwheel.devlist", "aotwheel.backends.intel.catalog", "aotwheel.backends.intel.grammar", "importlib.resources",
                "aotwheel.runtime", "aotwheel.probe", "json"} & inspect, sorted(inspect)

    version = {m for m in _cli_modules("--version") if m.startswith("aotwheel")}
    assert version == {"aotwheel", "aotwheel.cli", "aotwheel.errors"}, version

    # check with --device: the devices are parsed, no runtime is probed (no probe module, no pyopencl)
    check = _cli_modules("check", "--device", "pvc", str(SMALL_LIB))
    assert "aotwheel.runtime" in check and not (OTHER_COMMANDS - {"aotwheel.cli.check"}) & check
    probes = {m for m in check if m.startswith("aotwheel.backends.") and (".probes" in m or m.endswith(".probe"))}
    assert not probes and not {"pyopencl", "aotwheel.devlist"} & check, sorted(check)

    # a backend's own command: its module, no core command's
    compile_ = _cli_modules("compile", "--help")
    assert "aotwheel.backends.intel.commands" in compile_ and not (OTHER_COMMANDS - {"aotwheel.backends.intel.commands"}) & compile_
    # found in the backends' settings (COMMANDS, SPIRV_COMPILER): no backend object, data model or dataclasses
    # (Python 3.14's argparse colours its help through _colorize, which imports dataclasses: what
    # argparse's own help output loads is no part of aotwheel's)
    argparse_help = set(_new_modules("import argparse\np = argparse.ArgumentParser(prog='x')\n"
                                     "p.add_subparsers().add_parser('y', help='z')\np.format_help()"))
    object_model = {"aotwheel.backends.intel.backend", "aotwheel.backends.protocol", "aotwheel.backends.capabilities", "aotwheel.model"}
    assert not object_model & compile_, sorted(compile_)
    assert "dataclasses" not in compile_ - argparse_help, sorted(compile_)


def test_resolve_imports_no_ocloc_machinery_once_the_table_is_cached(tmp_path):
    # The default list's coverage plan reads ocloc.FIRST_OCLOC; a person's resolve reads the installed
    # ocloc's table from the cache, asked of ocloc once per binary (the first run below, where one is installed).
    env = {"AOTWHEEL_CACHE_DIR": str(tmp_path)}
    _cli_modules("resolve", env=env)
    for argv in (("resolve",), ("resolve", "pvc"), ("resolve", "--json")):
        loaded = _cli_modules(*argv, env=env)
        assert "aotwheel.backends.intel.coverage" in loaded
        assert not {"subprocess", "tempfile"} & loaded, (argv, sorted(loaded))


def test_inspecting_a_library_imports_no_verdict_model():
    # What the inspector never decides (verdicts, probed devices, settings) stays unloaded.
    for argv in (("inspect", str(SMALL_LIB)), ("inspect", "--all", str(SMALL_LIB))):
        loaded = _cli_modules(*argv)
        undecided = {"aotwheel.results", "aotwheel.backends.protocol", "aotwheel.backends.capabilities", "aotwheel.config"}
        assert "aotwheel.inspector" in loaded and not undecided & loaded


def test_help_still_lists_every_command():
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "--help"], capture_output=True, text=True, check=True)
    rows = proc.stdout.split("\n  COMMAND\n", 1)[1].split("\n\n")[0].splitlines()
    listed = [line.split()[0] for line in rows if line.startswith("    ") and not line.startswith("     ")]
    assert listed == ["resolve", "inspect", "devices", "check", "selftest", "build", "compile", "variant"]
