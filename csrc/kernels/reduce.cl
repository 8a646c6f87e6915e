// Sum reduction: each work-group writes one partial sum; the host (or a second launch) adds them.
// Local memory tree reduction; the work-group size must be a power of two.

__kernel void reduce_sum(__global const float *x, __global float *partial, __local float *scratch,
                         const uint n) {
    const size_t gid = get_global_id(0);
    const size_t lid = get_local_id(0);
    float acc = 0.0f;
    // Grid-stride loop so any n works with a fixed launch size.
    for (size_t i = gid; i < n; i += get_global_size(0))
        acc += x[i];
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
