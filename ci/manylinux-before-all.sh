#!/usr/bin/env bash
# Toolchain for the open-toolchain device-code build inside manylinux_2_28 (AlmaLinux 8):
# clang + a matching llvm-spirv (OpenCL C -> SPIR-V) and Intel's ocloc (SPIR-V -> native).
# Runs once per container from ci/cibuildwheel.toml's before-all. Not exercised on the
# development machines (no container engine there); hosted CI is its test.
set -euo pipefail

dnf -y install dnf-plugins-core epel-release
dnf -y install clang llvm spirv-llvm-translator-tools || dnf -y install clang llvm spirv-llvm-translator
# Intel's GPU repository for RHEL 8 carries ocloc (intel-ocloc).
dnf config-manager --add-repo https://repositories.intel.com/gpu/rhel/8.10/unified/intel-gpu-8.10.repo
dnf -y install intel-ocloc

missing=()
for tool in clang llvm-spirv ocloc; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "manylinux-before-all: missing ${missing[*]} after install; set AOTWHEEL_CLANG / AOTWHEEL_LLVM_SPIRV / AOTWHEEL_OCLOC in ci/cibuildwheel.toml's environment" >&2
  exit 1
fi
clang --version | head -1
llvm-spirv --version | head -2
