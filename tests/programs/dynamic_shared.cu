// Dynamic shared memory (extern __shared__): a block reduction sized by the launch, one
// buffer carved into arrays of two types, and more than 48 KiB after opting in with
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize).
#include <algorithm>
#include <vector>

#include "common.h"

__global__ void block_max(const int *x, int *out, int n) {
  extern __shared__ int scratch[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  scratch[threadIdx.x] = i < n ? x[i] : -2147483647 - 1;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      scratch[threadIdx.x] = max(scratch[threadIdx.x], scratch[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = scratch[0];
}

// Doubles first (8-byte aligned), then shorts behind them: blockDim.x of each.
__global__ void mixed_types(double *sums, int n) {
  extern __shared__ double buffer[];
  double *d = buffer;
  short *s = reinterpret_cast<short *>(d + blockDim.x);
  d[threadIdx.x] = threadIdx.x * 0.5;
  s[threadIdx.x] = (short)(blockDim.x - threadIdx.x);
  __syncthreads();
  int j = blockDim.x - 1 - threadIdx.x;
  sums[blockIdx.x * blockDim.x + threadIdx.x] = d[j] + s[j];
}

// Reverses `words` ints held entirely in shared memory.
__global__ void reverse_in_shared(int *x, int words) {
  extern __shared__ int big[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) big[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < words; i += blockDim.x) x[i] = big[words - 1 - i];
}

static void reduction_per_block_size() {
  const int n = 10000;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = (i * 7919) % 10007;
  int *d_x, *d_out;
  CHECK(cudaMalloc(&d_x, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  for (int block : {64, 256, 1024}) {
    int blocks = (n + block - 1) / block;
    block_max<<<blocks, block, block * sizeof(int)>>>(d_x, d_out, n);
    std::vector<int> got(blocks), want(blocks, -2147483647 - 1);
    CHECK(cudaMemcpy(got.data(), d_out, blocks * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) want[i / block] = std::max(want[i / block], x[i]);
    char label[64];
    snprintf(label, sizeof label, "block max, %d threads, %zu shared bytes", block,
             block * sizeof(int));
    expect_equal(label, got.data(), want.data(), blocks);
  }
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_out));
}

static void two_types_in_one_buffer() {
  const int block = 96, blocks = 3;
  double *sums;
  CHECK(cudaMallocManaged(&sums, block * blocks * sizeof(double)));
  mixed_types<<<blocks, block, block * (sizeof(double) + sizeof(short))>>>(sums, block);
  CHECK(cudaDeviceSynchronize());
  std::vector<double> want(block * blocks);
  for (int i = 0; i < block * blocks; ++i) {
    int j = block - 1 - i % block;
    want[i] = j * 0.5 + (block - j);
  }
  expect_equal("double and short arrays in one buffer", sums, want.data(), want.size());
  CHECK(cudaFree(sums));
}

static void more_than_48k() {
  const int words = 20000;  // 80000 bytes
  CHECK(cudaFuncSetAttribute(reverse_in_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             words * sizeof(int)));
  int *x;
  CHECK(cudaMallocManaged(&x, words * sizeof(int)));
  for (int i = 0; i < words; ++i) x[i] = i;
  reverse_in_shared<<<1, 512, words * sizeof(int)>>>(x, words);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want(words);
  for (int i = 0; i < words; ++i) want[i] = words - 1 - i;
  expect_equal("80000 bytes of dynamic shared memory", x, want.data(), words);
  CHECK(cudaFree(x));
}

int main() {
  reduction_per_block_size();
  two_types_in_one_buffer();
  more_than_48k();
  return finish();
}
