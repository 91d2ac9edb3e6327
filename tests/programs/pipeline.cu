// A small multi-kernel pipeline over one million values: a histogram (shared-memory atomics,
// merged globally), an exclusive scan of the histogram and of the data (block scans, a scan
// of their totals, then a fix-up pass), and a two-pass reduction; the kernels run on two
// streams joined by events, and everything is compared exactly with the host.
#include <vector>

#include "common.h"

const int BINS = 256, BLOCK = 256;

__global__ void histogram(const unsigned *x, int n, unsigned *bins) {
  __shared__ unsigned local[BINS];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[x[i] % BINS], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// Exclusive scan of one block's BLOCK values (Hillis-Steele in shared memory); the block's
// total goes to sums[blockIdx.x] when sums is given.
__global__ void block_scan(const unsigned *in, unsigned *out, int n, unsigned *sums) {
  __shared__ unsigned buf[2][BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  unsigned v = i < n ? in[i] : 0;
  int cur = 0;
  buf[cur][threadIdx.x] = v;
  __syncthreads();
  for (int offset = 1; offset < BLOCK; offset *= 2) {
    unsigned add = threadIdx.x >= offset ? buf[cur][threadIdx.x - offset] : 0;
    buf[1 - cur][threadIdx.x] = buf[cur][threadIdx.x] + add;
    cur = 1 - cur;
    __syncthreads();
  }
  if (i < n) out[i] = buf[cur][threadIdx.x] - v;
  if (sums && threadIdx.x == BLOCK - 1) sums[blockIdx.x] = buf[cur][threadIdx.x];
}

__global__ void add_block_offsets(unsigned *out, int n, const unsigned *offsets) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] += offsets[blockIdx.x];
}

__global__ void reduce_pass(const unsigned *in, int n, unsigned long long *out) {
  __shared__ unsigned long long partial[BLOCK];
  unsigned long long sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    sum += in[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// Exclusive scan of any n: block scans, the scan of their totals (recursively), a fix-up.
static void scan(const unsigned *d_in, unsigned *d_out, int n, cudaStream_t s) {
  if (n <= BLOCK) {
    block_scan<<<1, BLOCK, 0, s>>>(d_in, d_out, n, nullptr);
    return;
  }
  int blocks = (n + BLOCK - 1) / BLOCK;
  unsigned *sums, *offsets;
  CHECK(cudaMalloc(&sums, blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&offsets, blocks * sizeof(unsigned)));
  block_scan<<<blocks, BLOCK, 0, s>>>(d_in, d_out, n, sums);
  scan(sums, offsets, blocks, s);
  add_block_offsets<<<blocks, BLOCK, 0, s>>>(d_out, n, offsets);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(sums));
  CHECK(cudaFree(offsets));
}

int main() {
  const int n = 1 << 20;
  std::vector<unsigned> x(n);
  for (int i = 0; i < n; ++i) x[i] = (unsigned)((i * 2654435761ull) >> 13) % 1000;
  unsigned *d_x, *d_bins, *d_bin_scan, *d_scan;
  unsigned long long *d_partial;
  CHECK(cudaMalloc(&d_x, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_scan, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_bins, BINS * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_bin_scan, BINS * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_partial, 64 * sizeof(unsigned long long)));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));

  cudaStream_t a, b;
  cudaEvent_t bins_done;
  CHECK(cudaStreamCreate(&a));
  CHECK(cudaStreamCreate(&b));
  CHECK(cudaEventCreateWithFlags(&bins_done, cudaEventDisableTiming));
  CHECK(cudaMemsetAsync(d_bins, 0, BINS * sizeof(unsigned), a));
  histogram<<<128, BINS, 0, a>>>(d_x, n, d_bins);
  CHECK(cudaEventRecord(bins_done, a));
  scan(d_x, d_scan, n, b);
  reduce_pass<<<64, BLOCK, 0, b>>>(d_x, n, d_partial);
  CHECK(cudaStreamWaitEvent(b, bins_done, 0));
  scan(d_bins, d_bin_scan, BINS, b);
  CHECK(cudaStreamSynchronize(b));

  std::vector<unsigned> bins(BINS), bin_scan(BINS), scanned(n);
  std::vector<unsigned long long> partial(64);
  CHECK(cudaMemcpy(bins.data(), d_bins, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(bin_scan.data(), d_bin_scan, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(scanned.data(), d_scan, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(partial.data(), d_partial, 64 * sizeof(unsigned long long),
                   cudaMemcpyDeviceToHost));

  std::vector<unsigned> want_bins(BINS, 0), want_bin_scan(BINS), want_scan(n);
  unsigned long long total = 0, device_total = 0;
  for (int i = 0; i < n; ++i) {
    want_bins[x[i] % BINS]++;
    want_scan[i] = (unsigned)total;
    total += x[i];
  }
  for (int k = 0, run = 0; k < BINS; run += want_bins[k], ++k) want_bin_scan[k] = run;
  for (unsigned long long p : partial) device_total += p;
  expect_equal("histogram", bins.data(), want_bins.data(), BINS);
  expect_equal("scan of the histogram", bin_scan.data(), want_bin_scan.data(), BINS);
  expect_equal("scan of 1048576 values", scanned.data(), want_scan.data(), n);
  printf("reduction: %llu (host %llu)\n", device_total, total);
  require(device_total == total, "reduction equals the host's sum");
  CHECK(cudaEventDestroy(bins_done));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  for (void *p : {(void *)d_x, (void *)d_scan, (void *)d_bins, (void *)d_bin_scan,
                  (void *)d_partial})
    CHECK(cudaFree(p));
  return finish();
}
