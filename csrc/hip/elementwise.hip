// HIP twin of csrc/kernels/elementwise.cl's vector_add: c = a + b (float32, one thread per element).
// Built by aotwheel_add_hip_device_code() into _kernels' .hip_fatbin when USE_AOT_DEVLIST names AMD
// GPUs (gfx90a, gfx1030, ...); extern "C" keeps the kernel's name unmangled, as in OpenCL.
#include <hip/hip_runtime.h>

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
