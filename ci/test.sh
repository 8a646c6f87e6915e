#!/usr/bin/env bash
# The whole test suite: toolchain + .venv (ci/setup.sh), aotwheel installed from this checkout
# with its test extras (a real fat-wheel build through ocloc), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
.venv/bin/python -m pip install -q --force-reinstall --no-deps .
.venv/bin/python -m pip install -q ".[test]"
export PATH="$PWD/.venv/bin:$PATH"
if [[ -f .venv/opencl-cpu.env ]]; then source .venv/opencl-cpu.env; fi
exec .venv/bin/python -m pytest -q "$@"
