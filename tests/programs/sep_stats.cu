// One of sep_main.cu's translation units: shifts by a constant of its own (named as
// sep_scale.cu's) and sums with a block reduction in static shared memory.
#include "common.h"

namespace {
__constant__ float c_param;

__global__ void apply(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += c_param;
}

__global__ void block_sums(const float *x, double *sums, int n) {
  __shared__ double partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
}
}  // namespace

void shift_on_device(float *x, int n, float offset) {
  CHECK(cudaMemcpyToSymbol(c_param, &offset, sizeof offset));
  apply<<<(n + 255) / 256, 256>>>(x, n);
  CHECK(cudaGetLastError());
}

double sum_on_device(const float *x, int n) {
  int blocks = (n + 255) / 256;
  double *sums, total = 0;
  CHECK(cudaMallocManaged(&sums, blocks * sizeof(double)));
  block_sums<<<blocks, 256>>>(x, sums, n);
  CHECK(cudaDeviceSynchronize());
  for (int b = 0; b < blocks; ++b) total += sums[b];
  CHECK(cudaFree(sums));
  return total;
}
