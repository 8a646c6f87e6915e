/* aotwheel_portable.h: compile this project's OpenCL C kernels as CUDA C++ with nvcc.
 *
 *   nvcc -x cu -include csrc/aotwheel_portable.h -cubin -arch=sm_90 csrc/kernels/elementwise.cl
 *
 * One source for both vendors: the .cl files stay plain OpenCL C for clang/ocloc (this header
 * is never seen there), and the few OpenCL built-ins they use map onto CUDA's:
 *   __kernel -> extern "C" __global__ (unmangled names, same as the OpenCL kernel names)
 *   __global/__constant/__private -> nothing (CUDA pointers are generic)
 *   __local  -> __shared__ for arrays declared in a kernel body. A __local POINTER PARAMETER
 *              becomes an ordinary device pointer (nvcc ignores the qualifier there): the CUDA
 *              launcher passes a global scratch buffer and launches ONE work-group, which kernels
 *              written with a grid-stride loop (reduce_sum) allow.
 *   get_*_id / get_*_size / get_num_groups -> blockIdx/blockDim/threadIdx/gridDim
 *   barrier(...) -> __syncthreads() (orders shared and global memory within the block)
 *   reqd_work_group_size(x,y,z) -> launch_bounds(x*y*z) inside __attribute__((...))
 * Math built-ins (fma, fmax, exp, INFINITY) already have float overloads in CUDA.
 */
#ifndef AOTWHEEL_PORTABLE_H
#define AOTWHEEL_PORTABLE_H

#if !defined(__CUDACC__)
#error "aotwheel_portable.h is for nvcc (-x cu); OpenCL compilers need no header"
#endif

#include <math.h>
#include <stddef.h>

/* "__shared__ does not apply here": expected on __local pointer parameters (see above). */
#pragma nv_diag_suppress 1835

#define __kernel extern "C" __global__
#define kernel extern "C" __global__
#define __global
#define __constant const
#define __private
#define __local __shared__
#define reqd_work_group_size(x, y, z) launch_bounds((x) * (y) * (z))

typedef unsigned int uint;
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned long ulong;

#define CLK_LOCAL_MEM_FENCE 1
#define CLK_GLOBAL_MEM_FENCE 2

static __device__ __forceinline__ void barrier(int) { __syncthreads(); }

static __device__ __forceinline__ size_t aotwheel_dim3(dim3 v, uint d) {
    return d == 0 ? v.x : d == 1 ? v.y : d == 2 ? v.z : 1;
}
static __device__ __forceinline__ size_t aotwheel_uint3(uint3 v, uint d) {
    return d == 0 ? v.x : d == 1 ? v.y : d == 2 ? v.z : 0;
}
static __device__ __forceinline__ size_t get_local_id(uint d) { return aotwheel_uint3(threadIdx, d); }
static __device__ __forceinline__ size_t get_group_id(uint d) { return aotwheel_uint3(blockIdx, d); }
static __device__ __forceinline__ size_t get_local_size(uint d) { return aotwheel_dim3(blockDim, d); }
static __device__ __forceinline__ size_t get_num_groups(uint d) { return aotwheel_dim3(gridDim, d); }
static __device__ __forceinline__ size_t get_global_id(uint d) {
    return get_group_id(d) * get_local_size(d) + get_local_id(d);
}
static __device__ __forceinline__ size_t get_global_size(uint d) {
    return get_num_groups(d) * get_local_size(d);
}
static __device__ __forceinline__ uint get_work_dim() { return gridDim.z > 1 || blockDim.z > 1 ? 3 : gridDim.y > 1 || blockDim.y > 1 ? 2 : 1; }

#endif /* AOTWHEEL_PORTABLE_H */
