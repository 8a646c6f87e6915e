"""The LLVM tools the benchmarks compile OpenCL C with: the oldest installed clang-N /
llvm-spirv-N pair (Debian 12: 15; Debian sid's current toolchain: 19), as the tests pick it."""

from __future__ import annotations

import shutil


def _major() -> int:
    for major in range(15, 20):
        if shutil.which(f"clang-{major}") and shutil.which(f"llvm-spirv-{major}"):
            return major
    return 15  # none installed: the tool checks name these


MAJOR = _major()
CLANG = f"clang-{MAJOR}"
LLVM_SPIRV = f"llvm-spirv-{MAJOR}"
LLVM_LINK = f"llvm-link-{MAJOR}"
