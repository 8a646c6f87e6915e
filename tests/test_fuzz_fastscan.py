"""libFuzzer over the C core of aotwheel._fastscan (csrc/fastscan_core.h), short CI run: 20,000
inputs under ASan + UBSan from a seed corpus of real ocloc output; any sanitizer report or failed
assertion (a span outside the input) fails the test. The long run: fuzz/fastscan_long.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import _fastscan_util as fz
import _fuzz_util as fu

pytestmark = pytest.mark.usefixtures("fuzzing")

RUNS = 20_000


# With nvcc's seeds only where nvcc runs (the cuda marker; sid's glibc headers refuse PyPI's nvcc 13.0).
@pytest.mark.parametrize("cuda", [pytest.param(False, id="ocloc-seeds"), pytest.param(True, marks=pytest.mark.cuda, id="nvcc-seeds")])
def test_fastscan_fuzzer_finds_nothing(tmp_path: Path, cuda: bool) -> None:
    try:
        fuzzer = fz.build(tmp_path / "fastscan_fuzzer")
        seeds = fz.seed_corpus(tmp_path / "corpus", cuda=cuda)
    except fu.MissingTool as exc:
        pytest.skip(str(exc))
    assert len(seeds) >= 5
    run = fz.run(fuzzer, tmp_path / "corpus", tmp_path / "artifacts", f"-runs={RUNS}", "-seed=1", "-timeout=10", "-rss_limit_mb=2048",
                 timeout=600)
    assert run.returncode == 0 and not run.findings, run.output[-4000:]
    assert not any((tmp_path / "artifacts").iterdir())
    assert run.execs >= RUNS and run.cov > 100, run.output[-2000:]  # it ran, and got past the magic checks


def test_fastscan_fuzzer_findings_stay_fixed(tmp_path: Path) -> None:
    """Replays what the long run found (tests/data/fastscan)."""
    try:
        fuzzer = fz.build(tmp_path / "fastscan_fuzzer")
    except fu.MissingTool as exc:
        pytest.skip(str(exc))
    found = sorted((fz.REPO / "tests" / "data" / "fastscan").iterdir())
    assert found
    proc = subprocess.run([str(fuzzer), *map(str, found)], capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
