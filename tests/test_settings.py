"""The settings model: every variable declared once, one vocabulary of switches, one error style.

Read from the source and run on the real readers (the settings object, the remote-cache
configuration the build steps use, the CMake-facing resolver), so a variable spelled anew in a
module, or a switch that accepts other words than the rest, fails here.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel import config, variables
from aotwheel.buildsteps.remote import config_from
from aotwheel.errors import AotwheelError

SRC = Path(__file__).resolve().parents[1] / "python" / "aotwheel"
NAME = re.compile(r"^(AOTWHEEL|USE_AOT|TORCH_XPU)_[A-Z0-9_]+$")
# Switches and where each is read: the settings object, or the build steps' remote configuration.
SWITCHES = {
    variables.FIELD_DEFAULTS: lambda env: config.Config.from_mapping(env).field_defaults,
    variables.JIT_FALLBACK: lambda env: config.Config.from_mapping(env).jit_fallback,
    variables.COMPRESS: lambda env: config.Config.from_mapping(env).compress,
    variables.REMOTE_CACHE_READONLY: lambda env: config_from(env).readonly,
}


@pytest.mark.parametrize("word,value", [("ON", True), ("y", True), ("Yes", True), ("1", True), ("true", True),
                                        ("OFF", False), ("n", False), ("no", False), ("0", False), ("False", False)])
@pytest.mark.parametrize("var", list(SWITCHES), ids=lambda v: v.name)
def test_every_switch_reads_the_same_words(var: variables.Variable, word: str, value: bool) -> None:
    assert SWITCHES[var]({var.name: word}) is value


@pytest.mark.parametrize("var", list(SWITCHES), ids=lambda v: v.name)
def test_every_switch_rejects_a_non_word_in_one_line_naming_it(var: variables.Variable) -> None:
    with pytest.raises(AotwheelError) as info:
        SWITCHES[var]({var.name: "maybe"})
    assert str(info.value) == f"{var.name}='maybe' is not a boolean; use ON or OFF"


@pytest.mark.parametrize("var", list(SWITCHES), ids=lambda v: v.name)
def test_an_unset_or_empty_switch_is_its_declared_default(var: variables.Variable) -> None:
    default = variables.flag(var.default, name=var.name)
    assert SWITCHES[var]({}) is default and SWITCHES[var]({var.name: " "}) is default


def test_the_settings_object_holds_every_declared_variable() -> None:
    fields = set(config.Config.__dataclass_fields__)
    missing = [v.name for v in variables.VARIABLES
               if v.name.removeprefix("AOTWHEEL_").removeprefix("USE_AOT_").lower() not in fields and v is not variables.TORCH_ARCH_LIST]
    assert missing == []  # TORCH_XPU_ARCH_LIST is read into devlist/devlist_source
    # Each backend's variables (declared in its own package): read from the mapping, text as given, else the default.
    declared = config.backend_variables()
    assert declared and not set(declared) & set(variables.VARIABLES)
    env = {v.name: f" value of {v.name} " for v in declared}
    assert [config.read(env).value(v) for v in declared] == [f"value of {v.name}" for v in declared]
    assert [config.read({v.name: " " for v in declared}).value(v) for v in declared] == [v.default for v in declared]


def test_names_are_spelled_only_where_they_are_declared() -> None:
    # A variable's name as a whole string constant anywhere but variables.py is a second spelling
    # (os.environ.get("AOTWHEEL_X"), a message's .replace("USE_AOT_DEVLIST", ...)).
    declared = {v.name for v in config.all_variables()}  # the core's and every backend's
    spelled: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "variables.py":  # the core's declarations, or a backend's
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value):
                spelled.setdefault(str(path.relative_to(SRC)), []).append(node.value)
    assert {p: [n for n in names if n in declared] for p, names in spelled.items() if set(names) & declared} == \
        {p: names for p, names in KNOWN_SPELLINGS.items()}


# Modules that still spell a variable's name (each should use aotwheel.variables or its backend's variables module).
KNOWN_SPELLINGS: dict[str, list[str]] = {
}


def test_every_variable_the_code_reads_is_declared() -> None:
    # Names read from an environment mapping (os.environ.get / env.get / environ[...]) with a literal.
    read: set[str] = set()
    for path in SRC.rglob("*.py"):
        read |= set(re.findall(r"""(?:environ|env)(?:\.get\(|\[)\s*["']((?:AOTWHEEL|USE_AOT)_[A-Z0-9_]+)["']""",
                               path.read_text(encoding="utf-8")))
    assert read <= {v.name for v in config.all_variables()}


def test_each_backends_settings_are_standard_library_only() -> None:
    # Build steps import a backend's variables module once per ninja edge, and --device's help reads
    # every backend's: neither may load typing, dataclasses, the data model or a backend object.
    code = ("import sys\nfrom aotwheel import backends\nnames = [backends.settings(n).__name__ for n in backends.names()]\n"
            "print(names, sorted(m for m in sys.modules if m in ('typing', 'dataclasses', 'aotwheel.model', 'aotwheel.config') "
            "or m.endswith('.backend')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['aotwheel.backends.intel.variables', 'aotwheel.backends.nvidia.variables', 'aotwheel.backends.amd.variables'] []"
    code = ("import sys\nfrom aotwheel.cli import main\ntry:\n    main(['check', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m in ('typing', 'dataclasses', 'aotwheel.model') or m.endswith('.backend')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "(same as $AOTWHEEL_DEVICE; e.g. bmg, 12.60.7, acm-g11,cpu, sm_90, gfx942)" in " ".join(out.split())
    # What argparse's own help output loads is no part of aotwheel's (Python 3.14's argparse colours
    # its help through _colorize, which imports dataclasses): only what aotwheel adds to it counts.
    floor = ("import argparse, sys\np = argparse.ArgumentParser(prog='x')\np.add_subparsers().add_parser('y', help='z')\n"
             "p.format_help()\nprint(sorted(m for m in sys.modules if m in ('typing', 'dataclasses')))")
    argparse_own = eval(subprocess.run([sys.executable, "-c", floor], capture_output=True, text=True, check=True).stdout)
    assert set(eval(out.splitlines()[-1])) - set(argparse_own) == set()


def test_the_default_device_list_is_the_default_backends() -> None:
    assert config.DEFAULT_DEVLIST == "pvc,ats-m150" and config.read({}).devlist == "pvc,ats-m150"
    assert config.read({variables.DEVLIST.name: " "}).devlist_source == "the default"
