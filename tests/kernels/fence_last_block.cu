// fence_last_block.cu: the "last block finishes the job" reduction pattern: every block writes
// its partial sum, issues __threadfence() so the write is visible device-wide, and takes a
// ticket with atomicInc; the block that draws the last ticket reads all partials (through
// volatile loads, so they are not cached in registers) and writes the total.
//
// sum_last_block(const int* x, volatile int* partials, unsigned* ticket, int* total, int n)
//   launch: grid = (g,) with g <= 1024, block = (256,), dynamic shared = 0 (block must be 256)
//   partials has g entries; *ticket starts at 0 and returns to 0 afterwards (atomicInc wraps
//   at g - 1). *total = sum of x[0:n] (int; exact) written by the last block alone; the
//   partials are summed in block order 0..g-1 by thread 0 of that block
// spin_flag_handoff(int* data, volatile int* flag, int* out)
//   launch: grid = (2,), block = (32,), dynamic shared = 0; *flag starts at 0. Block 1 spins
//   until block 0 has run: an implementation must run the blocks concurrently, or block 0
//   first (a GPU always does, two blocks being resident together)
//   block 0 writes data[t] = t * t for t < 32, fences, then sets *flag = 1; block 1 waits
//   for the flag with volatile loads and __nanosleep(100) back-off, fences, and copies
//   out[t] = data[t] + 1. Result: out[t] = t*t + 1

#define BLOCK 256

extern "C" __global__ void sum_last_block(const int* x, volatile int* partials, unsigned* ticket,
                                          int* total, int n)
{
    __shared__ int s[BLOCK];
    __shared__ bool is_last;
    int acc = 0;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x)
        acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = s[0];
        __threadfence();
        unsigned t = atomicInc(ticket, gridDim.x - 1);
        is_last = t == gridDim.x - 1;
    }
    __syncthreads();
    if (is_last && threadIdx.x == 0) {
        int sum = 0;
        for (unsigned b = 0; b < gridDim.x; ++b)
            sum += partials[b];
        *total = sum;
    }
}

extern "C" __global__ void spin_flag_handoff(int* data, volatile int* flag, int* out)
{
    int t = threadIdx.x;
    if (blockIdx.x == 0) {
        data[t] = t * t;
        __threadfence();
        __syncthreads();
        if (t == 0)
            *flag = 1;
    } else {
        if (t == 0)
            while (*flag == 0)
                __nanosleep(100);
        __syncthreads();
        __threadfence();
        out[t] = ((volatile int*)data)[t] + 1;
    }
}
