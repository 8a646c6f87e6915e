// C = A * B for row-major float32 matrices (M x K times K x N), 16x16 local-memory tiles.
// Launch with global size rounded up to multiples of TILE and local size TILE x TILE.

#define TILE 16

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void gemm_tiled(__global const float *A, __global const float *B, __global float *C, const uint M,
                const uint N, const uint K) {
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    const uint col = get_global_id(0);
    const uint row = get_global_id(1);
    const uint lc = get_local_id(0);
    const uint lr = get_local_id(1);
    float acc = 0.0f;
    for (uint t = 0; t < K; t += TILE) {
        As[lr][lc] = (row < M && t + lc < K) ? A[row * K + t + lc] : 0.0f;
        Bs[lr][lc] = (col < N && t + lr < K) ? B[(t + lr) * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < TILE; ++k)
            acc = fma(As[lr][k], Bs[k][lc], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}
