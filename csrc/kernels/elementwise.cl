// Element-wise kernels: c = a + b and y = alpha * x + y (float32, one work-item per element).

__kernel void vector_add(__global const float *a, __global const float *b, __global float *c,
                         const uint n) {
    const size_t i = get_global_id(0);
    if (i < n)
        c[i] = a[i] + b[i];
}

__kernel void saxpy(const float alpha, __global const float *x, __global float *y, const uint n) {
    const size_t i = get_global_id(0);
    if (i < n)
        y[i] = fma(alpha, x[i], y[i]);
}
