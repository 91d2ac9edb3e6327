// scan_hillis_steele.cu: inclusive prefix sum of each block's tile with the Hillis-Steele
// algorithm (log2(b) steps, double-buffered in shared memory so no step reads what it writes).
//
// scan_inclusive_hillis_steele(const float* x, float* y, float* block_sums, int n)
//   launch: grid = ((n + 511) / 512,), block = (512,), dynamic shared = 0 (block must be 512)
//   for each tile of 512 elements starting at k*512: y[k*512 + t] = x[k*512] + ... + x[k*512+t]
//   (elements past n count as 0 and are not written); block_sums[k] = the tile's total.
//   Additions happen in the fixed order of the algorithm: step d adds the element 2**d back.

#define TILE 512

extern "C" __global__ void scan_inclusive_hillis_steele(const float* x, float* y,
                                                        float* block_sums, int n)
{
    __shared__ float buf[2][TILE];
    int t = threadIdx.x;
    int i = blockIdx.x * TILE + t;
    int cur = 0;
    buf[cur][t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < TILE; d <<= 1) {
        float v = buf[cur][t];
        if (t >= d)
            v = buf[cur][t - d] + v;
        buf[cur ^ 1][t] = v;
        cur ^= 1;
        __syncthreads();
    }
    if (i < n)
        y[i] = buf[cur][t];
    if (t == TILE - 1)
        block_sums[blockIdx.x] = buf[cur][t];
}
