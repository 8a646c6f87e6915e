"""README.md's fenced blocks, and a block run as a user types it (tests/test_first_hour.py,
tests/test_readme_blocks.py)."""

from __future__ import annotations

import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

README = (REPO / "README.md").read_text()
_FENCE = re.compile(r"^( *)```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it opens, its language tag ("" for output) and its dedented text."""

    line: int
    lang: str
    text: str

    @property
    def head(self) -> str:
        """Its first non-blank line: what the coverage map and the tests name it by."""
        return next(line for line in self.text.splitlines() if line.strip()).strip()


def blocks(text: str = README) -> list[Block]:
    """Every fenced block, in order (fences indented inside list items too)."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m[1], m[2]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == f"{indent}```"), None)
        assert end is not None, f"README.md:{i + 1}: a ``` block that never closes"
        out.append(Block(i + 1, lang, textwrap.dedent("\n".join(lines[i + 1:end])) + "\n"))
        i = end + 1
    return out


def block(head: str) -> Block:
    """The one README block whose first line is ``head`` (a test walking it fails when it changes)."""
    found = [b for b in blocks() if b.head == head]
    assert len(found) == 1, f"README.md has {len(found)} blocks starting {head!r}; update the test that walks it"
    return found[0]


def run_block(block: str, cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """A README block as a user types it, line after line in one shell (comments stay: bash drops
    them); the first failing line stops it (-e) and -x shows which."""
    proc = subprocess.run(["bash", "-exc", block], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    return proc
