#!/usr/bin/env bash
# Installs Intel's CPU OpenCL runtime from PyPI into $PYTHON's environment (default python3)
# and makes it findable by the ICD loader that pyopencl wheels bundle:
#   <prefix>/etc/aotwheel-opencl-vendors/intel-cpu.icd  -> <prefix>/lib/libintelocl.so
#   (plus copies of /etc/OpenCL/vendors/*.icd: OCL_ICD_VENDORS replaces that folder)
#   <prefix>/opencl-cpu.env                             -> export OCL_ICD_VENDORS=...
# and, in a virtual environment, makes <prefix>/bin/activate source that file, so that every
# program run in the activated venv (dpctl, dpnp, pyopencl) sees the CPU device, not only
# `aotwheel devices|check|selftest`, which find the runtime on their own when OCL_ICD_VENDORS is
# unset. Without activation: source <prefix>/opencl-cpu.env (ci/test.sh does).
# Measured on the dev machine (Debian 12, 2 cores): 276 MB of wheels (intel-opencl-rt 225 MB,
# intel-cmplr-lib-rt 41.5 MB, tbb 6.9 MB, tcmlib 2.8 MB), 684 MB installed; pip install took
# 9 s wall here (fast mirror). Idempotent: a second run only rewrites the two small files.
set -euo pipefail
PYTHON=${PYTHON:-python3}
prefix=$("$PYTHON" -c 'import sys; print(sys.prefix)')
lib="$prefix/lib/libintelocl.so"
if [[ ! -f "$lib" ]]; then
  echo "install-opencl-cpu: pip install intel-opencl-rt tbb intel-cmplr-lib-rt (~280 MB download)" >&2
  "$PYTHON" -m pip install -q intel-opencl-rt tbb intel-cmplr-lib-rt
fi
if [[ ! -f "$lib" ]]; then
  echo "install-opencl-cpu: error: $lib missing after install; check pip's output" >&2
  exit 1
fi
vendors="$prefix/etc/aotwheel-opencl-vendors"
mkdir -p "$vendors"
printf '%s\n' "$lib" > "$vendors/intel-cpu.icd"
if [[ -d /etc/OpenCL/vendors ]]; then
  for icd in /etc/OpenCL/vendors/*.icd; do
    [[ -f "$icd" ]] && cp -f "$icd" "$vendors/system-$(basename "$icd")"
  done
fi
printf 'export OCL_ICD_VENDORS=%q\n' "$vendors" > "$prefix/opencl-cpu.env"
activate="$prefix/bin/activate"
if [[ -f "$activate" ]] && ! grep -q 'opencl-cpu.env' "$activate"; then
  # Appended: activate's own body is untouched; the file only exports OCL_ICD_VENDORS.
  printf '\n# added by aotwheel ci/install-opencl-cpu.sh: Intel CPU OpenCL runtime for every program\n. %q\n' \
    "$prefix/opencl-cpu.env" >> "$activate"
fi
echo "install-opencl-cpu: CPU OpenCL runtime ready; run: source $prefix/opencl-cpu.env" >&2
cat "$prefix/opencl-cpu.env"
