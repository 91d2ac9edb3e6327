// Launch configurations no device accepts: too many threads per block, a block too deep in
// z, a grid too tall in y, an empty grid. Each is reported by cudaPeekAtLastError (which
// keeps it) and cudaGetLastError (which clears it); none is sticky, so a good launch works
// after them. The error is cudaErrorInvalidValue, as CUDA 13.5's runtime returns it on NVIDIA's
// driver 580 (the H100 oracle), not the cudaErrorInvalidConfiguration of older runtimes.
#include "common.h"

__global__ void write_index(int *x) { x[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x; }

static void bad_launch(const char *label, dim3 grid, dim3 block, int *x) {
  write_index<<<grid, block>>>(x);
  cudaError_t peeked = cudaPeekAtLastError();
  cudaError_t got = cudaGetLastError();
  char peek_label[96];
  snprintf(peek_label, sizeof peek_label, "%s (peek)", label);
  expect_error(peek_label, peeked, cudaErrorInvalidValue);
  expect_error(label, got, cudaErrorInvalidValue);
  expect_error("then cudaGetLastError", cudaGetLastError(), cudaSuccess);
}

int main() {
  int *x;
  CHECK(cudaMalloc(&x, 4096 * sizeof(int)));
  bad_launch("2048 threads per block", dim3(1), dim3(2048), x);
  bad_launch("block of 1 x 1 x 128", dim3(1), dim3(1, 1, 128), x);
  bad_launch("grid of 1 x 65536", dim3(1, 65536), dim3(32), x);
  bad_launch("grid of 0 blocks", dim3(0), dim3(32), x);
  write_index<<<4, 1024>>>(x);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int got[4096], want[4096];
  CHECK(cudaMemcpy(got, x, sizeof got, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 4096; ++i) want[i] = i % 1024;
  expect_equal("good launch afterwards", got, want, 4096);
  printf("%s: %s\n", cudaGetErrorName(cudaErrorInvalidConfiguration),
         cudaGetErrorString(cudaErrorInvalidConfiguration));
  CHECK(cudaFree(x));
  return finish();
}
