// syncthreads_count.cu: block-wide barrier votes: __syncthreads_count, _and and _or, plus the
// same predicate evaluated twice per thread to use the barriers inside a loop.
//
// block_votes(const int* x, int* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   per block k (threads past n vote 0), with p = x[i] > 0 and q = x[i] % 3 == 0:
//   out[4k + 0] = __syncthreads_count(p), out[4k + 1] = __syncthreads_and(p) (1/0; a block
//   with threads past n therefore gives 0), out[4k + 2] = __syncthreads_or(p),
//   out[4k + 3] = __syncthreads_count(q) + __syncthreads_count(!q) (always blockDim.x)

extern "C" __global__ void block_votes(const int* x, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : 0;
    int p = i < n && v > 0;
    int q = i < n && v % 3 == 0;
    int count = __syncthreads_count(p);
    int all = __syncthreads_and(p);
    int any = __syncthreads_or(p);
    int total = 0;
    for (int round = 0; round < 2; ++round)
        total += __syncthreads_count(round == 0 ? q : !q);
    if (threadIdx.x == 0) {
        out[4 * blockIdx.x + 0] = count;
        out[4 * blockIdx.x + 1] = all != 0;
        out[4 * blockIdx.x + 2] = any != 0;
        out[4 * blockIdx.x + 3] = total;
    }
}
