// reduce_warp.cu: reductions built from warp shuffles: each warp reduces in registers, warp
// leaders meet in shared memory, and the first warp finishes; the block's result goes to
// global memory with one atomic.
//
// reduce_sum_warp_f64(const double* x, double* out, int n)
//   launch: grid = (g,), block = (b,) with b a multiple of 32 and <= 1024, dynamic shared = 0
//   *out += sum of x[0:n] by atomicAdd(double) (host zeroes *out). The order of the blocks'
//   atomics varies, so give integer-valued inputs (sums below 2**53) for an exact answer.
// reduce_max_warp_i32(const int* x, int* out, int n)
//   launch: as reduce_sum_warp_f64
//   *out = max(*out, max of x[0:n]) (host sets *out = INT_MIN); uses __shfl_xor_sync
//   (butterfly: every lane ends up with the maximum) and atomicMax
// reduce_minmax_u32(const unsigned* x, unsigned* out_min, unsigned* out_max, int n)
//   launch: as reduce_sum_warp_f64
//   *out_min = min(*out_min, min x); *out_max = max(*out_max, max x) (host sets them to
//   0xffffffff and 0); __shfl_down_sync tree reduction with an unsigned atomicMin/atomicMax

__device__ __forceinline__ double warp_sum(double v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void reduce_sum_warp_f64(const double* x, double* out, int n)
{
    __shared__ double warp_sums[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    double acc = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += x[i];
    acc = warp_sum(acc);
    if (lane == 0)
        warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / 32;
        acc = lane < nwarps ? warp_sums[lane] : 0.0;
        acc = warp_sum(acc);
        if (lane == 0)
            atomicAdd(out, acc);
    }
}

extern "C" __global__ void reduce_max_warp_i32(const int* x, int* out, int n)
{
    __shared__ int warp_max[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int m = -2147483647 - 1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        m = max(m, x[i]);
    for (int mask = 16; mask > 0; mask >>= 1)
        m = max(m, __shfl_xor_sync(0xffffffffu, m, mask));
    if (lane == 0)
        warp_max[warp] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)blockDim.x / 32; ++w)
            m = max(m, warp_max[w]);
        atomicMax(out, m);
    }
}

extern "C" __global__ void reduce_minmax_u32(const unsigned* x, unsigned* out_min,
                                             unsigned* out_max, int n)
{
    unsigned lo = 0xffffffffu, hi = 0u;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        lo = min(lo, x[i]);
        hi = max(hi, x[i]);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        lo = min(lo, __shfl_down_sync(0xffffffffu, lo, offset));
        hi = max(hi, __shfl_down_sync(0xffffffffu, hi, offset));
    }
    if (threadIdx.x % 32 == 0) {
        atomicMin(out_min, lo);
        atomicMax(out_max, hi);
    }
}
