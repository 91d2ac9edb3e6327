// Recovering from a sticky error: a kernel faults (an illegal address far past its buffer),
// every call then returns cudaErrorIllegalAddress, cudaDeviceReset clears it, and the program
// allocates, launches and copies again as if new.
#include "common.h"

__global__ void wild_store(int *x) { x[((size_t)1 << 40) / sizeof(int) + threadIdx.x] = 1; }

__global__ void fill(int *x, int value) { x[threadIdx.x] = value + threadIdx.x; }

int main() {
  int *x;
  CHECK(cudaMalloc(&x, 64 * sizeof(int)));
  wild_store<<<1, 32>>>(x);
  expect_error("cudaDeviceSynchronize after the fault", cudaDeviceSynchronize(),
               cudaErrorIllegalAddress);
  expect_error("cudaMemset (sticky)", cudaMemset(x, 0, 64), cudaErrorIllegalAddress);
  expect_error("cudaGetLastError", cudaGetLastError(), cudaErrorIllegalAddress);
  expect_error("cudaDeviceReset", cudaDeviceReset(), cudaSuccess);
  CHECK(cudaMalloc(&x, 64 * sizeof(int)));
  fill<<<1, 64>>>(x, 1000);
  int got[64], want[64];
  CHECK(cudaMemcpy(got, x, sizeof got, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) want[i] = 1000 + i;
  expect_equal("allocate, launch and copy after the reset", got, want, 64);
  CHECK(cudaFree(x));
  return finish();
}
