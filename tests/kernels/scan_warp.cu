// scan_warp.cu: inclusive scans from warp shuffles (__shfl_up_sync): a pure per-warp scan, and
// a block scan that scans each warp, scans the warp totals with the first warp, and adds them.
//
// scan_warp_inclusive(const int* x, int* y, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   for each aligned group of 32 elements (one warp): y[i] = sum of x[32*(i/32) .. i];
//   elements past n count as 0 and are not written
// scan_block_inclusive(const float* x, float* y, int n)
//   launch: grid = ((n + b - 1) / b,), block = (b,) with b a multiple of 32, <= 1024,
//           dynamic shared = 0
//   for each tile of b elements: y[i] = sum of the tile's elements up to i, computed as
//   (lane scan within the warp) + (exclusive scan of the preceding warps' totals)

__device__ __forceinline__ int warp_inclusive_scan_i32(int v, int lane)
{
    for (int d = 1; d < 32; d <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d)
            v += up;
    }
    return v;
}

__device__ __forceinline__ float warp_inclusive_scan_f32(float v, int lane)
{
    for (int d = 1; d < 32; d <<= 1) {
        float up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d)
            v += up;
    }
    return v;
}

extern "C" __global__ void scan_warp_inclusive(const int* x, int* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : 0;
    v = warp_inclusive_scan_i32(v, threadIdx.x & 31);
    if (i < n)
        y[i] = v;
}

extern "C" __global__ void scan_block_inclusive(const float* x, float* y, int n)
{
    __shared__ float warp_totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = warp_inclusive_scan_f32(i < n ? x[i] : 0.0f, lane);
    if (lane == 31)
        warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x >> 5;
        float total = lane < nwarps ? warp_totals[lane] : 0.0f;
        warp_totals[lane] = warp_inclusive_scan_f32(total, lane) - total;  // exclusive
    }
    __syncthreads();
    if (i < n)
        y[i] = v + warp_totals[warp];
}
