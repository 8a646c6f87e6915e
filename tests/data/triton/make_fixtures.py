"""Regenerate the Triton-XPU fixtures of tests/data/triton (issue 38).

Needs a virtual environment of its own (the test suite does not): PyPI's ``triton-xpu==3.3.0b1``,
``intel-sycl-rt`` (the SYCL headers Triton's ``arch_parser.c`` includes), a CPU ``torch`` (Triton's
Intel driver calls ``torch.xpu.is_available()``), Debian's ``libze-dev`` and ``CC=g++``. No GPU:
the target is a :class:`GPUTarget` made of ``torch.xpu.get_device_capability()``'s keys for each
device, so Triton specialises the SPIR-V for it as on that GPU. Run::

    CC=g++ /work/triton-venv/bin/python tests/data/triton/make_fixtures.py

It compiles each kernel below for pvc and dg2 with ``TRITON_CACHE_DIR`` set to ``<target>/``
here, then keeps only what a packaging step needs of each cache entry (``<name>.spv`` and
``<name>.json``, in their ``<hash>/`` folder as Triton lays them out) and drops the IR stages.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = Path(__file__).resolve().parent

# torch.xpu.get_device_capability() on each GPU: the keys Triton's XPUBackend reads. `architecture`
# is SYCL's ext_oneapi_architecture value (intel-sycl-rt's device_architecture.def: intel_gpu_pvc
# 0x030f000700, intel_gpu_acm_g10 = dg2_g10 0x030dc00800), which arch_parser.c maps to "pvc"/"dg2".
TARGETS: dict[str, dict[str, object]] = {
    "pvc": {
        "architecture": 0x000000030F000700, "name": "Intel(R) Data Center GPU Max 1550", "platform_name": "Intel(R) Level-Zero",
        "vendor": "Intel(R) Corporation", "version": "12.60.7", "driver_version": "1.6.33578+15", "type": "gpu",
        "max_compute_units": 448, "gpu_eu_count": 448, "gpu_subslice_count": 56, "max_work_group_size": 1024,
        "max_num_sub_groups": 64, "sub_group_sizes": [16, 32], "has_fp16": True, "has_fp64": True, "has_atomic64": True,
        "has_bfloat16_conversions": True, "has_subgroup_matrix_multiply_accumulate": True,
        "has_subgroup_matrix_multiply_accumulate_tensor_float32": True, "has_subgroup_2d_block_io": True,
        "is_integrated_gpu": False, "total_memory": 68719476736, "local_mem_size": 131072,
    },
    "dg2": {
        "architecture": 0x000000030DC00800, "name": "Intel(R) Arc(TM) A770 Graphics", "platform_name": "Intel(R) Level-Zero",
        "vendor": "Intel(R) Corporation", "version": "12.55.8", "driver_version": "1.6.33578+15", "type": "gpu",
        "max_compute_units": 512, "gpu_eu_count": 512, "gpu_subslice_count": 32, "max_work_group_size": 1024,
        "max_num_sub_groups": 128, "sub_group_sizes": [8, 16, 32], "has_fp16": True, "has_fp64": False, "has_atomic64": True,
        "has_bfloat16_conversions": True, "has_subgroup_matrix_multiply_accumulate": True,
        "has_subgroup_matrix_multiply_accumulate_tensor_float32": False, "has_subgroup_2d_block_io": False,
        "is_integrated_gpu": False, "total_memory": 17079205888, "local_mem_size": 65536,
    },
}


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)

@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        softmax_output = numerator / tl.sum(numerator, axis=0)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, softmax_output, mask=mask)

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)

@triton.jit
def matmul_block_ptr_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                            stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                            BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    a_block_ptr = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                    offsets=(pid_m * BLOCK_SIZE_M, 0), block_shape=(BLOCK_SIZE_M, BLOCK_SIZE_K),
                                    order=(1, 0))
    b_block_ptr = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                    offsets=(0, pid_n * BLOCK_SIZE_N), block_shape=(BLOCK_SIZE_K, BLOCK_SIZE_N),
                                    order=(1, 0))
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_SIZE_K):
        a = tl.load(a_block_ptr, boundary_check=(0, 1))
        b = tl.load(b_block_ptr, boundary_check=(0, 1))
        accumulator += tl.dot(a, b)
        a_block_ptr = tl.advance(a_block_ptr, (0, BLOCK_SIZE_K))
        b_block_ptr = tl.advance(b_block_ptr, (BLOCK_SIZE_K, 0))
    c = accumulator.to(tl.float32)
    c_block_ptr = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                    offsets=(pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N),
                                    block_shape=(BLOCK_SIZE_M, BLOCK_SIZE_N), order=(1, 0))
    tl.store(c_block_ptr, c, boundary_check=(0, 1))


def kernels() -> dict[str, tuple[object, dict[str, str], dict[str, int], dict[str, object]]]:
    mm_sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
              "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32",
              "stride_cn": "i32"}
    bp_sig = dict(mm_sig, c_ptr="*fp32")
    # name -> (fn, signature, constexprs, options)
    return {
        "add_kernel": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
                       {"BLOCK_SIZE": 1024}, {}),
        "softmax_kernel": (softmax_kernel, {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                                            "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                           {"BLOCK_SIZE": 1024}, {"num_warps": 8}),
        "matmul_kernel": (matmul_kernel, mm_sig, {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32,
                                                  "GROUP_SIZE_M": 8}, {"num_warps": 8}),
        "matmul_block_ptr_kernel": (matmul_block_ptr_kernel, bp_sig, {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256,
                                                                      "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4},
                                    {"num_warps": 32, "grf_mode": "large"}),
        # needs a large register file: a 128x128 fp32 accumulator on 8 warps is 128 floats per
        # work-item, all of the 128 registers of the default GRF (ocloc 26.27 spills ~98 bytes on pvc
        # with them and none with 256). Triton's default grf_mode: no GRF option in build_flags.
        "large_grf_kernel": (matmul_block_ptr_kernel, bp_sig, {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128,
                                                               "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4},
                             {"num_warps": 8}),
    }


def main() -> int:
    for target, caps in TARGETS.items():
        out = HERE / target
        shutil.rmtree(out, ignore_errors=True)
        index: dict[str, str] = {}
        for label, (fn, signature, constexprs, options) in kernels().items():
            staging = HERE / f".cache-{target}-{label}"
            shutil.rmtree(staging, ignore_errors=True)
            os.environ["TRITON_CACHE_DIR"] = str(staging)
            src = ASTSource(fn, {**signature, **{k: "constexpr" for k in constexprs}}, constexprs)
            compiled = triton.compile(src, target=GPUTarget("xpu", caps, 32), options=options)
            meta = compiled.metadata
            print(f"{target} {label}: {meta.name} build_flags={meta.build_flags!r} grf_mode={meta.grf_mode!r} "
                  f"threads_per_warp={meta.threads_per_warp} spv={len(compiled.asm['spv'])} bytes", file=sys.stderr)
            for entry in staging.iterdir():
                if not entry.is_dir() or not (entry / f"{meta.name}.spv").exists():
                    continue
                keep = out / entry.name
                keep.mkdir(parents=True, exist_ok=True)
                index[label] = f"{entry.name}/{meta.name}"
                for suffix in (".spv", ".json"):
                    shutil.copy2(entry / f"{meta.name}{suffix}", keep / f"{meta.name}{suffix}")
            shutil.rmtree(staging)
        (out / "target.json").write_text(json.dumps(caps, indent=1) + "\n")
        # which cache entry holds which kernel (the tests name them so; Triton's hashes say nothing)
        (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
