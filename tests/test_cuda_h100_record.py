"""The H100 run's record (tests/data/cuda-h100/, benchmarks/results/cuda_h100.json) against the
parser and the verdict rules, offline.

cuobjdump.txt is the H100 machine's own cuobjdump output for the three libraries built there;
the parser must read the same images from the same bytes. The verdicts expected for an H100
(compute capability 9.0) are written by hand from NVIDIA's rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.fatbin import read_fatbin
from aotwheel.runtime import check

from _cuda_util import parse_listing

pytestmark = pytest.mark.usefixtures("nvcc")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "cuda-h100"
RESULTS = REPO / "benchmarks" / "results" / "cuda_h100.json"  # the second (latest) H100 run
EXPECTED = {"sm_90": "native", "sm_80-ptx": "jit", "ptx": "jit"}


def h100_listings() -> dict[str, list[tuple[str, str]]]:
    text = (DATA / "cuobjdump.txt").read_text()
    blocks = re.split(r"^### (\S+): .*$", text, flags=re.MULTILINE)[1:]
    return {name: parse_listing(body) for name, body in zip(blocks[::2], blocks[1::2])}


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_parser_reads_what_the_h100_cuobjdump_listed(variant: str) -> None:
    listed = h100_listings()[variant]
    assert listed, "the recorded listing is empty"
    fat = read_fatbin(DATA / f"libkern_{variant}.so")
    assert fat is not None
    assert [(e.kind, f"sm_{e.arch}") for e in fat.entries] == listed
    assert len(fat.containers) == 4  # one fat binary per csrc kernel file


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_h100_verdicts(variant: str) -> None:
    [v] = check(DATA / f"libkern_{variant}.so", "sm_90", policy="ignore", vendor="nvidia")
    assert v.verdict == EXPECTED[variant]


def test_recorded_run_is_consistent() -> None:
    record = json.loads(RESULTS.read_text())
    assert record["probe"]["devices"][0]["cc"] == "9.0" and "H100" in record["probe"]["devices"][0]["name"]
    for variant, want in EXPECTED.items():
        v = record["variants"][variant]
        assert v["verdict"]["verdict"] == want and v["agree"] is True
        assert v["kernels"]["pass"] is True and max(v["kernels"]["max_error"].values()) < 1e-4
        for mode in ("cold", "warm"):
            assert v["first_load"][mode]["runs"] >= 5
        # 'aotwheel check' said the same (the NVIDIA integration, then applied from a patch to a copy).
        check = record["integrated"][f"check_{variant}"]
        assert check["rc"] == 0 and f": {want} " in check["stdout"]
    assert all(t["agree"] for t in record["third_party"])
