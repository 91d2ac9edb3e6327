// radix_sort_step.cu: one pass of a least-significant-digit radix sort on 4-bit digits: a
// histogram of the digit (shared-memory atomics, then global atomics), and a stable scatter
// that places every key given the exclusive scan of that histogram.
//
// radix_histogram(const unsigned* keys, unsigned* hist, int n, int shift)
//   launch: grid = (g,), block = (256,), dynamic shared = 0
//   hist[d] += number of keys with ((key >> shift) & 15) == d, for d in 0..15
//   (host zeroes hist[16] first; integer counts: exact in any order)
// radix_scatter(const unsigned* keys, unsigned* out, const unsigned* digit_offsets, int n,
//               int shift)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   digit_offsets[d] = exclusive scan of hist (16 entries). Key i goes to
//   out[digit_offsets[d] + (number of keys j < i with the same digit d)], a stable counting
//   sort pass. Each thread ranks its key by scanning all earlier keys: O(n^2), fine for n up
//   to a few thousand.

#define RADIX 16

extern "C" __global__ void radix_histogram(const unsigned* keys, unsigned* hist, int n, int shift)
{
    __shared__ unsigned local[RADIX];
    if (threadIdx.x < RADIX)
        local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[(keys[i] >> shift) & (RADIX - 1)], 1u);
    __syncthreads();
    if (threadIdx.x < RADIX && local[threadIdx.x] != 0)
        atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}

extern "C" __global__ void radix_scatter(const unsigned* keys, unsigned* out,
                                         const unsigned* digit_offsets, int n, int shift)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned key = keys[i];
    unsigned digit = (key >> shift) & (RADIX - 1);
    unsigned rank = 0;
    for (int j = 0; j < i; ++j)
        rank += ((keys[j] >> shift) & (RADIX - 1)) == digit;
    out[digit_offsets[digit] + rank] = key;
}
