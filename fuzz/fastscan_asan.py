#!/usr/bin/env python3
"""aotwheel._fastscan's Python glue (csrc/_fastscan.c) under AddressSanitizer + UBSan.

    python fuzz/fastscan_asan.py                      # the C-vs-Python tests, 300 mutations each
    python fuzz/fastscan_asan.py --examples 3000      # ten times the mutations
    python fuzz/fastscan_asan.py -- -k host_libraries # pytest arguments after --

The libFuzzer run (fuzz/fastscan_long.py) covers the pure-C core; the functions that walk
``.tgtimg`` tables and make Python objects (tgtimg, table_leaves, slot_addends, leaves) need a
Python around them. This builds the extension with gcc ``-fsanitize=address,undefined`` into a
scratch copy of python/aotwheel, preloads the sanitizer runtimes into the interpreter only (child
processes such as ocloc run without them) and runs tests/test_fastscan.py and the inspect tests
that reach the C scanner: real and hypothesis-mutated host libraries compared with the Python
readers in the default, deep and large-table modes, and NVIDIA fat binaries (real libraries, nvcc
output, mutated) compared with backends/nvidia/fatbin.py's readers. A sanitizer report aborts the run (exit != 0).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = ["tests/test_fastscan.py", "tests/test_fastscan_cuda.py", "tests/test_inspect_large.py", "tests/test_listed_sizes.py", "tests/test_compressed_ir.py",
         "tests/test_inspect_local.py", "tests/test_inspect_thirdparty.py", "tests/test_inspect_bitsandbytes.py"]


def _runtime(name: str) -> str:
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=True).stdout.strip()
    if not os.path.isabs(path):
        sys.exit(f"fastscan_asan: gcc has no {name}. Try: apt-get install gcc")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=300, help="hypothesis mutations per test (tests/test_fastscan.py EXAMPLES)")
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args(argv)
    if shutil.which("gcc") is None:
        sys.exit("fastscan_asan: needs gcc. Try: apt-get install gcc")
    with tempfile.TemporaryDirectory(prefix="aotwheel-asan-") as tmp:
        scratch = Path(tmp)
        shutil.copytree(REPO / "python" / "aotwheel", scratch / "aotwheel", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                        "-fno-sanitize-recover=undefined", f"-I{sysconfig.get_paths()['include']}", str(REPO / "csrc" / "_fastscan.c"),
                        "-o", str(scratch / "aotwheel" / "_fastscan.abi3.so")], check=True)
        # Loaded by the interpreter at start; then dropped so that ocloc, gcc and the rest run plain.
        (scratch / "sitecustomize.py").write_text('import os\nos.environ.pop("LD_PRELOAD", None)\n')
        env = dict(os.environ, LD_PRELOAD=f"{_runtime('libasan.so')} {_runtime('libubsan.so')}", PYTHONPATH=str(scratch),
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
                   AOTWHEEL_FASTSCAN_EXAMPLES=str(a.examples))
        env.pop("AOTWHEEL_NO_FASTSCAN", None)
        check = "import aotwheel.formats.fastscan as f, sys; m = f.module(); sys.exit(0 if m and m.__file__.startswith(sys.argv[1]) else 1)"
        if subprocess.run([sys.executable, "-c", check, tmp], env=env, cwd=REPO).returncode != 0:
            sys.exit("fastscan_asan: the instrumented extension did not load")
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS, *a.pytest_args], env=env,
                              cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
