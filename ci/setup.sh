#!/usr/bin/env bash
# Installs aotwheel's toolchain (run as root) and creates .venv: what the main job needs
# (`bash ci/setup.sh`, from ci/main.sh: the toolchain that builds a wheel, Python's venv and pip);
# with --test (from ci/test.sh) also the test tools and servers, the test dependencies, NVIDIA's
# nvcc from PyPI, Intel's CPU OpenCL runtime and the SYCL packages. Idempotent: a second run only checks.
#
# Two Intel toolchains, picked by what the apt archive offers (AOTWHEEL_TOOLCHAIN=debian12|current
# forces one):
#   debian12: Debian 12's intel-opencl-icd (ocloc 22.43: up to pvc / acm-g12) + clang-15/llvm-spirv-15;
#   current:  Debian sid/testing's intel-ocloc 26.x with libigc2/libigdfcl2 (bmg, lnl, ptl, wcl, nvl,
#             cri too) + clang-19/llvm-spirv-19.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
case "${1:-}" in
  --test) tests=1 ;;
  "") tests=0 ;;
  *) echo "ci/setup.sh: error: unknown argument '$1'; use --test (the test suite's set-up) or nothing (the main job's)" >&2; exit 2 ;;
esac

toolchain=${AOTWHEEL_TOOLCHAIN:-}
if [[ -z "$toolchain" ]]; then
  # The archive's package lists decide; a minbase root has none until the first update.
  if ! apt-cache show intel-ocloc intel-opencl-icd >/dev/null 2>&1; then apt-get update -qq; fi
  if apt-cache show intel-ocloc >/dev/null 2>&1; then toolchain=current; else toolchain=debian12; fi
fi
case "$toolchain" in
  debian12)
    INTEL_PACKAGES=(
      intel-opencl-icd   # ocloc: Intel's offline GPU compiler (22.43 on Debian 12), and the GPU driver (OpenCL,
                         # Level Zero) whose simulation mode judges the verdicts (tests/test_driver_verdicts.py)
      libze1             # the Level Zero loader that driver's libze_intel_gpu.so is found through
      libigc-tools       # iga64: disassembler used by tests to prove images are real GPU code
      clang-15 llvm-spirv-15 llvm-15  # OpenCL C -> LLVM IR -> SPIR-V; llvm-link-15 for benchmarks/
      libclang-common-15-dev  # libclang_rt.fuzzer/asan/ubsan: the libFuzzer target fuzz/fastscan_fuzzer.c
      clang-tools-15     # clang-offload-bundler-15: makes and independently lists AMD offload bundles
      hipcc              # AMD's HIP compiler 5.2.3 (clang-15's AMDGPU back end, rocm-device-libs): the AMD
                         # build tests (tests/test_amd_build.py); the main job's default list names no AMD GPU
    ) ;;
  current)
    INTEL_PACKAGES=(
      intel-ocloc libigc2 libigdfcl2  # ocloc 26.x and the compiler libraries it loads
      intel-opencl-icd libze-intel-gpu1 libze1  # the 26.x GPU driver (OpenCL, Level Zero + loader): its simulation
                                                # mode judges the verdicts (tests/test_driver_verdicts.py)
      libigc-tools       # iga64 (IGC 1.x tools; installs beside libigc2)
      clang-19 llvm-spirv-19 llvm-19  # OpenCL C -> LLVM IR -> SPIR-V
      libclang-rt-19-dev clang-tools-19  # fuzzer/sanitizer runtimes; clang-offload-bundler-19
      g++-15  # nvcc 13.0 takes host compilers up to gcc 15; sid's default gcc is newer (ci/test.sh points nvcc at it)
      hipcc   # AMD's HIP compiler (ROCm 6.4 on clang-21: gfx1100 and generic processors too): the AMD build tests
    ) ;;
  *) echo "ci/setup.sh: error: AOTWHEEL_TOOLCHAIN=$toolchain; use debian12 or current" >&2; exit 2 ;;
esac
# The packages above that only the tests use (disassembler, fuzzer runtimes, bundler, LLVM tools,
# hipcc, nvcc's host compiler, the GPU driver the simulation tests judge with): the main job's build
# needs ocloc, clang and llvm-spirv alone (on Debian 12 ocloc comes in intel-opencl-icd itself).
TEST_ONLY=" libigc-tools llvm-15 libclang-common-15-dev clang-tools-15 hipcc llvm-19 libclang-rt-19-dev clang-tools-19 g++-15 libze1 libze-intel-gpu1 "
if [[ $toolchain == current ]]; then TEST_ONLY+="intel-opencl-icd "; fi
APT_PACKAGES=(
  cmake ninja-build gcc g++ binutils  # CMake + ninja drive the build (binutils: its linker)
  python3 python3-venv python3-dev python3-pip ca-certificates
)
for pkg in "${INTEL_PACKAGES[@]}"; do
  if ((tests)) || [[ "$TEST_ONLY" != *" $pkg "* ]]; then APT_PACKAGES+=("$pkg"); fi
done
if ((tests)); then
  APT_PACKAGES+=(
    git zstd  # zstd: an independent decompressor for the inspector tests
    openssl  # makes the self-signed certificate of the https:// remote-cache test
    nginx redis-server  # real remote-cache servers (WebDAV, Redis) the remote-cache tests start on loopback
  )
fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ($toolchain toolchain) ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
echo "$toolchain" >.venv/aotwheel-toolchain  # ci/test.sh picks the lane's tests by it
llvm=15; [[ $toolchain == current ]] && llvm=19
if ((!tests)); then  # the main job: pip's isolated build brings scikit-build-core, zstandard and CMake itself
  echo "ci/setup.sh: $toolchain toolchain ready: $(command -v ocloc) $(command -v clang-$llvm) $(command -v llvm-spirv-$llvm)"
  exit 0
fi
.venv/bin/python -m pip install -q "scikit-build-core>=0.10" "cmake>=3.26" ninja setuptools pyelftools zstandard packaging "pytest>=7" hypothesis numpy pyopencl wheel "cibuildwheel>=2.16" pyyaml "mypy>=1.8" "variantlib[cli]==0.2.2" "ruff==0.17.6"
# NVIDIA's nvcc from PyPI: the packages of `pip install aotwheel[cuda]`, pinned to CUDA 13.0 (the
# release the NVIDIA tests' expectations were measured with) -> .venv/lib/python3.*/site-packages/
# nvidia/cu13/bin/nvcc, which aotwheel's nvcc discovery finds without PATH or CUDA_HOME.
.venv/bin/python -m pip install -q nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85

# Intel's CPU OpenCL runtime from PyPI: real SPIR-V JIT for the selftest and check tests.
if [[ -f ci/install-opencl-cpu.sh ]]; then
  PYTHON=.venv/bin/python bash ci/install-opencl-cpu.sh
fi
# Real SYCL packages for tests/test_sycl_runtime_cpu.py: the SYCL runtime (intel-sycl-rt) runs
# dpnp's kernels on the CPU runtime above, so `aotwheel check` is proven against the loader itself.
# Pinned (the test rewrites the option string these builds carry). Measured: 548 MB of wheels on
# top of the lines above (mkl 221, intel-sycl-rt 172, intel-openmp 50, intel-cmplr-lib-ur 33,
# dpnp 29, onemkl-sycl-* 81, dpctl 1.3), 2.0 GB installed; 15 s here from a warm pip cache.
# dpnp 0.20.0 has wheels for CPython 3.10-3.13; on a newer Python (Debian sid) the test skips, saying so.
if .venv/bin/python -c "import sys; sys.exit(sys.version_info >= (3, 14))"; then
  .venv/bin/python -m pip install -q dpnp==0.20.0 dpctl==0.22.1
fi
echo "ci/setup.sh: $toolchain toolchain and the test dependencies ready: $(command -v ocloc) $(command -v clang-$llvm) $(command -v llvm-spirv-$llvm)"
