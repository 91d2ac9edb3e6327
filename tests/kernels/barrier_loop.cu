// barrier_loop.cu: control flow around barriers: __syncthreads inside loops with a uniform trip
// count (iterative smoothing in shared memory), a barrier inside a loop whose trip count is
// read from memory (uniform per block), and threads that return early before a barrier-free
// tail (legal: the returned threads take no part in later barriers, and there are none).
//
// smooth_iterations(float* data, int iterations)
//   launch: grid = (g,), block = (256,), dynamic shared = 0 (block must be 256); data holds
//   g*256 floats, each block smoothing its own tile
//   repeat `iterations` times on the tile (periodic at the tile's ends):
//   v[t] = 0.25*v[t-1] + 0.5*v[t] + 0.25*v[(t+1) % 256] (NVRTC contracts to fmas; compare with
//   a small tolerance), all threads reading the old values before any writes (two barriers
//   per iteration); then data = v
// block_dependent_loop(const int* trips, int* data, int* out)
//   launch: grid = (g,), block = (128,), dynamic shared = 0 (block must be 128)
//   block k runs trips[k] rounds (a per-block value, so the barriers stay uniform); each round
//   rotates the block's 128 values in shared memory left by one and adds the round number to
//   every element: after the rounds, out[k*128 + t] = the value that started at t + trips[k]
//   (mod 128) plus sum of 0..trips[k]-1; data[k*128 + t] holds the starting values
// early_exit_tail(const float* x, float* y, int* flags, int n)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0 (block must be 128)
//   phase 1 (all threads, then a barrier): s[t] = x[i] (0 past n);
//   phase 2: threads with i >= n or s[t] < 0 return (flags[i] = -1 first when i < n);
//   the rest, without barriers, compute y[i] = s[t] + s[(t + 1) % 128] and loop
//   while (v > 1) v *= 0.5 counting the halvings into flags[i]

#define BLOCK 256
#define SMALL_BLOCK 128

extern "C" __global__ void smooth_iterations(float* data, int iterations)
{
    __shared__ float v[BLOCK];
    int t = threadIdx.x;
    float* tile = data + blockIdx.x * BLOCK;
    v[t] = tile[t];
    __syncthreads();
    for (int it = 0; it < iterations; ++it) {
        float left = v[(t + BLOCK - 1) % BLOCK], right = v[(t + 1) % BLOCK];
        float updated = 0.25f * left + 0.5f * v[t] + 0.25f * right;
        __syncthreads();
        v[t] = updated;
        __syncthreads();
    }
    tile[t] = v[t];
}

extern "C" __global__ void block_dependent_loop(const int* trips, int* data, int* out)
{
    __shared__ int s[SMALL_BLOCK];
    int t = threadIdx.x;
    int base = blockIdx.x * SMALL_BLOCK;
    s[t] = data[base + t];
    __syncthreads();
    int rounds = trips[blockIdx.x];
    for (int r = 0; r < rounds; ++r) {
        int next = s[(t + 1) % SMALL_BLOCK] + r;
        __syncthreads();
        s[t] = next;
        __syncthreads();
    }
    out[base + t] = s[t];
}

extern "C" __global__ void early_exit_tail(const float* x, float* y, int* flags, int n)
{
    __shared__ float s[SMALL_BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * SMALL_BLOCK + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i >= n)
        return;
    if (s[t] < 0.0f) {
        flags[i] = -1;
        return;
    }
    float v = s[t] + s[(t + 1) % SMALL_BLOCK];
    y[i] = v;
    int halvings = 0;
    while (v > 1.0f) {
        v *= 0.5f;
        ++halvings;
    }
    flags[i] = halvings;
}
