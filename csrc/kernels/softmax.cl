// Row-wise softmax of a rows x cols matrix (float32, row-major): one work-item per row.
// Subtracting the row maximum keeps exp() from overflowing.

__kernel void softmax_rows(__global const float *in, __global float *out, const uint rows,
                           const uint cols) {
    const size_t r = get_global_id(0);
    if (r >= rows)
        return;
    __global const float *x = in + r * cols;
    __global float *y = out + r * cols;
    float m = -INFINITY;
    for (uint j = 0; j < cols; ++j)
        m = fmax(m, x[j]);
    float sum = 0.0f;
    for (uint j = 0; j < cols; ++j) {
        const float e = exp(x[j] - m);
        y[j] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
    for (uint j = 0; j < cols; ++j)
        y[j] *= inv;
}
