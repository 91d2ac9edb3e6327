// reduce_shared.cu: sum reductions with a shared-memory tree inside each block; each block's
// partial sum is combined with one atomicAdd into the result, which the host zeroes first.
//
// reduce_sum_i32(const int* x, int* out, int n)
//   launch: grid = (min((n + 511) / 512, 256),), block = (256,), dynamic shared = 0
//   (block size must be 256: the tree uses a static 256-entry array)
//   *out += sum of x[0:n] (keep every partial sum within int range; exact in any order)
// reduce_sum_f32_dynamic(const float* x, float* partial, int n)
//   launch: grid = (g,), block = (b,) with b a power of two <= 1024,
//           dynamic shared = b * sizeof(float)
//   partial[blockIdx.x] = sum of the elements a block visits in a grid-stride loop
//   (thread t of block k adds x[k*b + t], x[k*b + t + g*b], ...; then a fixed-order tree:
//   s[t] += s[t + h] for h = b/2, b/4, ..., 1). No atomics: the result is deterministic.

#define BLOCK 256

extern "C" __global__ void reduce_sum_i32(const int* x, int* out, int n)
{
    __shared__ int s[BLOCK];
    int t = threadIdx.x;
    int acc = 0;
    // Each thread first adds pairs so that half the threads are not idle in the first step.
    for (int i = blockIdx.x * 2 * BLOCK + t; i < n; i += 2 * BLOCK * gridDim.x) {
        acc += x[i];
        if (i + BLOCK < n)
            acc += x[i + BLOCK];
    }
    s[t] = acc;
    __syncthreads();
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(out, s[0]);
}

extern "C" __global__ void reduce_sum_f32_dynamic(const float* x, float* partial, int n)
{
    extern __shared__ float sdata[];
    unsigned t = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x)
        acc += x[i];
    sdata[t] = acc;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h)
            sdata[t] += sdata[t + h];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = sdata[0];
}
