// scan_blelloch.cu: exclusive prefix sum of each block's tile with Blelloch's work-efficient
// up-sweep/down-sweep, two elements per thread, in dynamic shared memory; plus a kernel that
// adds scanned block totals back, to make a full multi-block scan.
//
// scan_exclusive_blelloch(const int* x, int* y, int* block_sums, int n)
//   launch: grid = ((n + 2b - 1) / (2b),), block = (b,) with b a power of two <= 1024,
//           dynamic shared = 2 * b * sizeof(int)
//   for each tile of 2b elements starting at k*2b: y[k*2b + j] = x[k*2b] + ... + x[k*2b+j-1]
//   (y at the tile's start is 0; elements past n count as 0 and are not written);
//   block_sums[k] = the tile's total. Integer sums: exact.
// scan_add_block_offsets(int* y, const int* block_offsets, int n)
//   launch: as scan_exclusive_blelloch, dynamic shared = 0
//   y[k*2b + j] += block_offsets[k] for every element of tile k (block_offsets is the
//   exclusive scan of block_sums)

extern "C" __global__ void scan_exclusive_blelloch(const int* x, int* y, int* block_sums, int n)
{
    extern __shared__ int temp[];
    int t = threadIdx.x;
    int m = 2 * blockDim.x;
    int base = blockIdx.x * m;
    temp[2 * t] = base + 2 * t < n ? x[base + 2 * t] : 0;
    temp[2 * t + 1] = base + 2 * t + 1 < n ? x[base + 2 * t + 1] : 0;

    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {  // up-sweep: build partial sums in place
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset <<= 1;
    }
    if (t == 0) {
        block_sums[blockIdx.x] = temp[m - 1];
        temp[m - 1] = 0;
    }
    for (int d = 1; d < m; d <<= 1) {  // down-sweep: distribute the sums back down the tree
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            int left = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += left;
        }
    }
    __syncthreads();
    if (base + 2 * t < n)
        y[base + 2 * t] = temp[2 * t];
    if (base + 2 * t + 1 < n)
        y[base + 2 * t + 1] = temp[2 * t + 1];
}

extern "C" __global__ void scan_add_block_offsets(int* y, const int* block_offsets, int n)
{
    int base = blockIdx.x * 2 * blockDim.x;
    int add = block_offsets[blockIdx.x];
    for (int j = threadIdx.x; j < 2 * (int)blockDim.x; j += blockDim.x)
        if (base + j < n)
            y[base + j] += add;
}
