#!/usr/bin/env bash
# The main job: install the toolchain (ci/setup.sh: ocloc, clang, llvm-spirv, CMake, ninja, a .venv
# with pip; no test dependencies), build aotwheel's own fat wheel with the default devlist
# (USE_AOT_DEVLIST, default pvc,ats-m150) through real ocloc, install it, and print its report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
rm -rf dist
.venv/bin/python -m pip wheel --no-deps -w dist .
wheel=$(ls dist/aotwheel-*.whl)
.venv/bin/python -m pip install -q --force-reinstall "$wheel"
echo "== resolved device list"
.venv/bin/aotwheel resolve
echo "== device code in $wheel"
.venv/bin/aotwheel inspect "$wheel"
echo "== aotwheel is installed in .venv; to use it from your shell: . .venv/bin/activate"
