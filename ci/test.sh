#!/usr/bin/env bash
# The whole test suite: toolchain + .venv (ci/setup.sh), aotwheel installed from this checkout
# with its test extras (a real fat-wheel build through ocloc), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
# Build aotwheel's wheel once, then install it (always, even at an unchanged version) and its test extras.
wheeldir=$(mktemp -d)
trap 'rm -rf "$wheeldir"' EXIT
.venv/bin/python -m pip wheel -q --no-deps -w "$wheeldir" .
wheel=$(ls "$wheeldir"/aotwheel-*.whl)
.venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
.venv/bin/python -m pip install -q "$wheel[test]"
export PATH="$PWD/.venv/bin:$PATH"
if [[ -f .venv/opencl-cpu.env ]]; then source .venv/opencl-cpu.env; fi
# nvcc 13.0 refuses gcc newer than 15 (Debian sid's is 16): give it the g++-15 ci/setup.sh installed.
if command -v g++-15 >/dev/null && (( $(gcc -dumpversion | cut -d. -f1) > 15 )); then
  export NVCC_PREPEND_FLAGS="-ccbin=$(command -v g++-15) ${NVCC_PREPEND_FLAGS:-}"
fi
# The current toolchain's lane (Debian sid: ocloc 26.x, clang-19, Python 3.14) runs the tests that
# read every expectation from the installed ocloc; the rest of the suite still pins Debian 12's tool
# outputs (22.43's legacy images, clang-15 SPIR-V) and runs in the Debian 12 lane.
if [[ $# -eq 0 && "$(cat .venv/aotwheel-toolchain 2>/dev/null)" == current ]]; then
  set -- tests/test_toolchain_current.py tests/test_verdict_xe2_xe3.py
fi
.venv/bin/python -m pytest -q "$@"
