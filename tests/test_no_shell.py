"""Issue 7 (6): no user string reaches a shell. Scans the shipped sources (Python and CMake)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Our sources only: benchmarks/.cache and .work hold third-party venvs and build trees (gitignored).
PY_SOURCES = [p for p in sorted((REPO / "python").rglob("*.py")) + sorted((REPO / "benchmarks").rglob("*.py")) + sorted((REPO / "ci").rglob("*.py"))
              if not {".cache", ".work", ".venv"} & set(p.relative_to(REPO).parts)]
CMAKE_SOURCES = sorted((REPO / "cmake").glob("*.cmake")) + [p for p in [REPO / "CMakeLists.txt"] if p.exists()]

SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"}


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            yield node, owner, name


def test_sources_exist() -> None:
    assert len(PY_SOURCES) > 5 and (REPO / "cmake" / "aotwheel-config.cmake") in CMAKE_SOURCES


def scan_python(paths: list[Path]) -> list[str]:
    problems = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node, owner, name in _calls(tree):
            where = f"{path.name}:{node.lineno}"
            if owner == "os" and name in {"system", "popen", "execl", "execlp", "spawnl", "spawnlp"}:
                problems.append(f"{where} os.{name}")
            if owner == "subprocess" and name in {"getoutput", "getstatusoutput"}:
                problems.append(f"{where} subprocess.{name} runs a shell")
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    problems.append(f"{where} shell={ast.unparse(kw.value)}")
            if owner == "subprocess" and name in SPAWNERS and node.args:
                first = node.args[0]
                # A command must be a list/tuple (or a variable holding one), never a string.
                if isinstance(first, (ast.Constant, ast.JoinedStr, ast.BinOp)) and not isinstance(getattr(first, "value", None), (list, tuple)):
                    problems.append(f"{where} string command {ast.unparse(first)[:60]}")
    return problems


def test_python_never_uses_a_shell() -> None:
    assert scan_python(PY_SOURCES) == []


def test_cmake_commands_are_verbatim_and_shell_free() -> None:
    problems = []
    for path in CMAKE_SOURCES:
        text = path.read_text()
        for m in re.finditer(r"add_custom_(command|target)\s*\((.*?)\n\s*\)", text, re.S):
            body = m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if "COMMAND" in body and "VERBATIM" not in body:
                problems.append(f"{path.name}:{line} add_custom_{m.group(1)} without VERBATIM")
        for m in re.finditer(r"\b(sh|bash|cmd)\s+(-c|/c)\b", text):
            problems.append(f"{path.name}:{text.count(chr(10), 0, m.start()) + 1} runs a shell")
    assert problems == []


def test_scanner_catches_a_shell(tmp_path: Path) -> None:
    """The scanner is not blind: each planted pattern is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import subprocess, os\n"
        "subprocess.run(['ocloc'], shell=True)\n"
        "os.system('ls')\n"
        "subprocess.check_output(f'ocloc -device {x}')\n"
        "subprocess.run(['ocloc', '-device', x], shell=False)\n"
    )
    problems = scan_python([bad])
    assert [p.split(" ", 1)[0] for p in problems] == ["bad.py:2", "bad.py:3", "bad.py:4"]
