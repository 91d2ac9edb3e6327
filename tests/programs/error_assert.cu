// A device-side assert that fails in one thread (block 2, thread 5): the next synchronisation
// returns cudaErrorAssert, which is sticky. (The device's assertion message goes where the
// device's printf goes; this program prints nothing after the launch until the error.)
#include <cassert>

#include "common.h"

__global__ void check_positive(const int *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(x[i] >= 0);
}

int main() {
  const int n = 256;
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i;
  host[2 * 32 + 5] = -1;
  int *x;
  CHECK(cudaMalloc(&x, sizeof host));
  CHECK(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice));
  printf("launching\n");
  fflush(stdout);
  check_positive<<<n / 32, 32>>>(x);
  cudaError_t sync = cudaDeviceSynchronize();
  fflush(stdout);
  expect_error("cudaDeviceSynchronize", sync, cudaErrorAssert);
  void *p = nullptr;
  expect_error("cudaMalloc afterwards (sticky)", cudaMalloc(&p, 16), cudaErrorAssert);
  return finish();
}
