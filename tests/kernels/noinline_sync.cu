// noinline_sync.cu: barriers and warp shuffles inside device functions that stay calls
// (__noinline__, as with -G debug builds or functions too large to inline): the CPU target
// inlines such calls before lowering; GPU targets keep them as calls.
//
// block_sum_noinline(const int* x, int* out)
//   launch: grid = (g,), block = (b,) with b a multiple of 32, <= 1024, dynamic shared = 0
//   out[k] = x[k*b] + ... + x[k*b + b-1]: warp_sum (shfl.down in a __noinline__ function)
//   per warp, warp totals through a shared array passed by pointer, __syncthreads inside
//   block_sum (__noinline__), then warp_sum again in warp 0 only (a call under a branch).
//   Integer sums: exact.

__device__ __noinline__ int warp_sum(int v)
{
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, d);
    return v;
}

__device__ __noinline__ int block_sum(int v, int* scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? scratch[lane] : 0;
    if (warp == 0)
        v = warp_sum(v);
    return v;
}

extern "C" __global__ void block_sum_noinline(const int* x, int* out)
{
    __shared__ int scratch[32];
    int s = block_sum(x[blockIdx.x * blockDim.x + threadIdx.x], scratch);
    if (threadIdx.x == 0)
        out[blockIdx.x] = s;
}
