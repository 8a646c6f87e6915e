#!/usr/bin/env bash
# The whole test suite: toolchain, test tools + .venv with the test dependencies and the CPU
# OpenCL runtime (ci/setup.sh --test), aotwheel installed from this checkout with its test extras
# (a real fat-wheel build through ocloc), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh --test
# Build aotwheel's wheel once, then install it (always, even at an unchanged version) and its test extras.
wheeldir=$(mktemp -d)
trap 'rm -rf "$wheeldir"' EXIT
.venv/bin/python -m pip wheel -q --no-deps -w "$wheeldir" .
wheel=$(ls "$wheeldir"/aotwheel-*.whl)
.venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
.venv/bin/python -m pip install -q "$wheel[test]"
# tests/test_readme_blocks.py installs the same wheel into the fresh venv it walks the README in.
export AOTWHEEL_TEST_WHEEL="$wheel"
export PATH="$PWD/.venv/bin:$PATH"
if [[ -f .venv/opencl-cpu.env ]]; then source .venv/opencl-cpu.env; fi
# nvcc 13.0 refuses gcc newer than 15 (Debian sid's is 16): give it the g++-15 ci/setup.sh installed.
if command -v g++-15 >/dev/null && (( $(gcc -dumpversion | cut -d. -f1) > 15 )); then
  export NVCC_PREPEND_FLAGS="-ccbin=$(command -v g++-15) ${NVCC_PREPEND_FLAGS:-}"
fi
# The current toolchain's lane (Debian sid: ocloc 26.x, clang-19, Python 3.14) runs the whole suite
# but the NVIDIA tests: PyPI's nvcc 13.0 cannot compile against sid's glibc headers (math
# functions declared twice); they run in the Debian 12 lane.
if [[ $# -eq 0 && "$(cat .venv/aotwheel-toolchain 2>/dev/null)" == current ]]; then
  set -- -m "not cuda"
fi
.venv/bin/python -m pytest -q "$@"
