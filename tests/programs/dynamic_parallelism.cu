// Dynamic parallelism (-rdc=true with cudadevrt), which a portable runtime may not have: each
// block of a parent kernel launches a child grid over its own slice, and a tail launch
// (cudaStreamTailLaunch) sums the slices when the children are done. A runtime without it must
// refuse the parent's launch with cudaErrorNotSupported (at launch or at the next
// synchronisation) and keep working (expected dynamic_parallelism.unsupported.txt).
#include <vector>

#include "common.h"

__global__ void child_square(int *slice, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) slice[i] = slice[i] * slice[i];
}

__global__ void child_sum(const int *x, int n, long long *total) {
  long long sum = 0;
  for (int i = 0; i < n; ++i) sum += x[i];
  *total = sum;
}

__global__ void parent(int *x, int per_block, long long *total) {
  if (threadIdx.x != 0) return;
  int *slice = x + blockIdx.x * per_block;
  child_square<<<(per_block + 127) / 128, 128>>>(slice, per_block);
  if (blockIdx.x == 0)
    child_sum<<<1, 1, 0, cudaStreamTailLaunch>>>(x, per_block * gridDim.x, total);
}

static int after_refusal() {
  cudaGetLastError();
  printf("dynamic parallelism: cudaErrorNotSupported\n");
  int *d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  CHECK(cudaFree(d));
  printf("runtime works after the refusal: ok\n");
  return finish();
}

int main() {
  const int blocks = 8, per_block = 1000, n = blocks * per_block;
  std::vector<int> x(n), want(n);
  for (int i = 0; i < n; ++i) x[i] = i % 101 - 50, want[i] = x[i] * x[i];
  int *dx;
  long long *total;
  CHECK(cudaMalloc(&dx, n * sizeof(int)));
  CHECK(cudaMallocManaged(&total, sizeof(long long)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  parent<<<blocks, 32>>>(dx, per_block, total);
  cudaError_t e = cudaGetLastError();
  if (refused(e, "parent launch")) return after_refusal();
  CHECK(e);
  e = cudaDeviceSynchronize();
  if (refused(e, "synchronisation after the parent")) return after_refusal();
  CHECK(e);
  CHECK(cudaMemcpy(x.data(), dx, n * sizeof(int), cudaMemcpyDeviceToHost));
  expect_equal("child grids squared every slice", x.data(), want.data(), n);
  long long want_total = 0;
  for (int v : want) want_total += v;
  printf("tail launch sum: %lld (host %lld)\n", *total, want_total);
  require(*total == want_total, "tail launch sum equals the host's");
  return finish();
}
