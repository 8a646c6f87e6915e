"""The cache key of the nvcc and hipcc steps (aotwheel.buildsteps.preprocess), on real clang -E
output: the same source and headers in two folders make one key; an edited header, a shifted
line or a different macro make another; the files the line markers name become the depfile."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aotwheel.buildsteps.preprocess import PreprocessFailed, preprocessed_key

from conftest import CLANG

pytestmark = pytest.mark.skipif(shutil.which(CLANG) is None, reason=f"{CLANG} is not installed (ci/setup.sh installs it)")

SOURCE = '#include "inc/scale.h"\nfloat scale(float x) { return x * SCALE; }\n'


def checkout(root: Path, header: str = "#define SCALE 2.0f\n", source: str = SOURCE) -> Path:
    (root / "inc").mkdir(parents=True)
    (root / "inc" / "scale.h").write_text(header)
    (root / "k.c").write_text(source)
    return root / "k.c"


def key(source: Path, *flags: str) -> tuple[str, list[str]]:
    return preprocessed_key([CLANG, "-E", *flags, str(source)], cwd=str(source.parent))


def test_two_checkouts_share_a_key_and_list_their_own_files(tmp_path: Path) -> None:
    one, two = checkout(tmp_path / "a"), checkout(tmp_path / "elsewhere" / "b")
    (sha1, deps1), (sha2, deps2) = key(one), key(two)
    assert sha1 == sha2
    assert deps1[:2] == [str(one), str(tmp_path / "a" / "inc" / "scale.h")]
    assert deps2[:2] == [str(two), str(tmp_path / "elsewhere" / "b" / "inc" / "scale.h")]
    assert not any(d.startswith("<") for d in deps1)  # <built-in>, <command line>: not files


TWICE = "static float twice(float x) { return 2 * x; }\n"
HEADER_CODE = "#define SCALE 2.0f\n" + TWICE


@pytest.mark.parametrize("header", ["#define SCALE 3.0f\n" + TWICE, "\n" * 12 + HEADER_CODE], ids=["header-text", "line-moved"])
def test_an_edited_header_changes_the_key(tmp_path: Path, header: str) -> None:
    """Its text, or only where a line stands (what a cubin's line info records)."""
    assert key(checkout(tmp_path / "changed", header))[0] != key(checkout(tmp_path / "base", HEADER_CODE))[0]


def test_only_macros_the_source_reads_change_the_key(tmp_path: Path) -> None:
    source = checkout(tmp_path / "a", "#ifndef SCALE\n#define SCALE 2.0f\n#endif\n")
    assert key(source)[0] != key(source, "-DSCALE=5.0f")[0]
    assert key(source)[0] == key(source, "-DUNUSED=1")[0]  # (the options are keyed apart, as they are)


def test_a_failing_preprocessor_says_why(tmp_path: Path) -> None:
    source = checkout(tmp_path / "a")
    (tmp_path / "a" / "inc" / "scale.h").unlink()
    with pytest.raises(PreprocessFailed, match="scale.h"):
        key(source)
