// SAXPY, the "hello world" of CUDA: y[i] = a * x[i] + y[i] for i < n.
// Launch with block = 256 and grid = ceil(n / 256).
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// A block-wide sum with shared memory and warp shuffles, one partial sum per block.
extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ partial,
                                     int n) {
    __shared__ float warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}
