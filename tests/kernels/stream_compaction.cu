// stream_compaction.cu: stable stream compaction (keep the elements with x > threshold, in
// order) by prefix sums, in three launches: count the survivors of each block, scan the
// counts, then scatter each survivor to (its block's offset + its rank in the block), the rank
// coming from a warp ballot/popc plus a scan of per-warp counts in shared memory.
//
// compact_count(const float* x, int* block_counts, float threshold, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0 (block must be 256)
//   block_counts[k] = number of i in [256k, 256k + 256) with i < n and x[i] > threshold
// compact_scan_counts(const int* block_counts, int* block_offsets, int* total, int num_blocks)
//   launch: grid = (1,), block = (1024,), dynamic shared = 0; num_blocks <= 1024
//   block_offsets = exclusive scan of block_counts; *total = the sum (Hillis-Steele in shared)
// compact_scatter(const float* x, const int* block_offsets, float* out, int* out_index,
//                 float threshold, int n)
//   launch: as compact_count
//   for each survivor i (in increasing i): out[p] = x[i], out_index[p] = i, where p is the
//   number of survivors before i. out holds *total elements.

#define BLOCK 256

extern "C" __global__ void compact_count(const float* x, int* block_counts, float threshold,
                                         int n)
{
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int keep = i < n && x[i] > threshold;
    int count = __syncthreads_count(keep);
    if (threadIdx.x == 0)
        block_counts[blockIdx.x] = count;
}

extern "C" __global__ void compact_scan_counts(const int* block_counts, int* block_offsets,
                                               int* total, int num_blocks)
{
    __shared__ int s[2][1024];
    int t = threadIdx.x;
    int cur = 0;
    s[0][t] = t < num_blocks ? block_counts[t] : 0;
    __syncthreads();
    for (int d = 1; d < 1024; d <<= 1) {
        s[cur ^ 1][t] = s[cur][t] + (t >= d ? s[cur][t - d] : 0);
        cur ^= 1;
        __syncthreads();
    }
    if (t < num_blocks)
        block_offsets[t] = s[cur][t] - block_counts[t];
    if (t == 1023)
        *total = s[cur][t];
}

extern "C" __global__ void compact_scatter(const float* x, const int* block_offsets, float* out,
                                           int* out_index, float threshold, int n)
{
    __shared__ int warp_offsets[BLOCK / 32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    bool keep = i < n && x[i] > threshold;
    unsigned ballot = __ballot_sync(0xffffffffu, keep);
    int rank_in_warp = __popc(ballot & ((1u << lane) - 1u));
    if (lane == 0)
        warp_offsets[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
        int running = 0;
        for (int w = 0; w < BLOCK / 32; ++w) {
            int c = warp_offsets[w];
            warp_offsets[w] = running;
            running += c;
        }
    }
    __syncthreads();
    if (keep) {
        int p = block_offsets[blockIdx.x] + warp_offsets[warp] + rank_in_warp;
        out[p] = x[i];
        out_index[p] = i;
    }
}
