// A wild kernel: thread 0 stores 1 TiB past the end of its buffer. The launch itself succeeds;
// the fault is reported at the next synchronisation as cudaErrorIllegalAddress, and it is
// sticky: every later call in the process returns it.
#include "common.h"

__global__ void wild_store(int *x) {
  x[threadIdx.x] = threadIdx.x;
  if (threadIdx.x == 0) x[((size_t)1 << 40) / sizeof(int)] = 1;
}

int main() {
  int *x;
  CHECK(cudaMalloc(&x, 256 * sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  wild_store<<<1, 64>>>(x);
  expect_error("launch", cudaGetLastError(), cudaSuccess);
  expect_error("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  expect_error("cudaGetLastError", cudaGetLastError(), cudaErrorIllegalAddress);
  void *p = nullptr;
  expect_error("cudaMalloc afterwards (sticky)", cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  int back = 0;
  expect_error("cudaMemcpy afterwards (sticky)",
               cudaMemcpy(&back, x, sizeof back, cudaMemcpyDeviceToHost),
               cudaErrorIllegalAddress);
  return finish();
}
