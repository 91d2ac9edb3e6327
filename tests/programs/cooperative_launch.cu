// A cooperative launch (cudaLaunchCooperativeKernel) whose blocks meet at grid.sync(): as many
// blocks as the occupancy query says fit at once each sum a slice, then block 0 sums the
// partial sums after the grid-wide barrier. A portable runtime may not have cooperative
// launches: it must then report cudaDevAttrCooperativeLaunch 0 or refuse the launch with
// cudaErrorNotSupported, and keep working (expected cooperative_launch.unsupported.txt).
#include <cooperative_groups.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

__global__ void grid_sum(const int *x, int n, long long *partial, long long *total) {
  cg::grid_group grid = cg::this_grid();
  __shared__ long long block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  long long mine = 0;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) mine += x[i];
  atomicAdd((unsigned long long *)&block_sum, (unsigned long long)mine);
  __syncthreads();
  if (threadIdx.x == 0) partial[blockIdx.x] = block_sum;
  grid.sync();
  if (grid.thread_rank() == 0) {
    long long sum = 0;
    for (int b = 0; b < gridDim.x; ++b) sum += partial[b];
    *total = sum;
  }
}

static int after_refusal() {
  cudaGetLastError();
  printf("cooperative launch: cudaErrorNotSupported\n");
  int *d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  CHECK(cudaMemset(d, 0, sizeof(int)));
  CHECK(cudaFree(d));
  printf("runtime works after the refusal: ok\n");
  return finish();
}

int main() {
  int supported = 0, sms = 0, per_sm = 0;
  CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, 0));
  if (!supported) return after_refusal();
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, 256, 0));
  int blocks = sms * per_sm;
  const int n = 1 << 20;
  std::vector<int> x(n);
  long long want = 0;
  for (int i = 0; i < n; ++i) x[i] = i % 1000 - 300, want += x[i];
  int *dx;
  long long *partial, *total;
  CHECK(cudaMalloc(&dx, n * sizeof(int)));
  CHECK(cudaMalloc(&partial, blocks * sizeof(long long)));
  CHECK(cudaMallocManaged(&total, sizeof(long long)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  int count = n;
  void *args[] = {&dx, &count, &partial, &total};
  cudaError_t e = cudaLaunchCooperativeKernel((const void *)grid_sum, blocks, 256, args, 0, 0);
  if (refused(e, "cudaLaunchCooperativeKernel")) return after_refusal();
  CHECK(e);
  CHECK(cudaDeviceSynchronize());
  printf("grid-wide sum: %lld (host %lld)\n", *total, want);
  require(*total == want, "grid-wide sum equals the host's");
  e = cudaLaunchCooperativeKernel((const void *)grid_sum, blocks * 64 + 1, 256, args, 0, 0);
  expect_error("more blocks than fit at once", e, cudaErrorCooperativeLaunchTooLarge);
  cudaGetLastError();
  return finish();
}
