// Occupancy and function attributes: cudaOccupancyMaxActiveBlocksPerMultiprocessor,
// cudaOccupancyMaxPotentialBlockSize, cudaOccupancyAvailableDynamicSMemPerBlock, and
// cudaFuncGetAttributes for static shared memory and __launch_bounds__, and what
// cudaFuncSetAttribute changes.
#include "common.h"

__global__ void __launch_bounds__(128) bounded(float *x) {
  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f;
}

__global__ void with_static_shared(float *x) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

__global__ void plain(int *x) { x[threadIdx.x] += 1; }

static void check_occupancy() {
  int blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, plain, 256, 0));
  printf("max active blocks of 256 threads >= 1: %s\n", blocks >= 1 ? "yes" : "no");
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, with_static_shared, 1024, 0));
  printf("max active blocks of 1024 threads with 4 KiB shared >= 1: %s\n",
         blocks >= 1 ? "yes" : "no");
  int min_grid = 0, block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, plain, 0, 0));
  require(min_grid >= 1 && block >= 32 && block <= 1024 && block % 32 == 0,
          "potential block size: a multiple of 32 in [32, 1024]");
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, bounded, 0, 0));
  printf("potential block size of a __launch_bounds__(128) kernel <= 128: %s\n",
         block <= 128 && block >= 32 ? "yes" : "no");
  size_t dynamic = 0;
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&dynamic, plain, 1, 256));
  printf("available dynamic shared memory >= 48 KiB: %s\n", dynamic >= 48 * 1024 ? "yes" : "no");
}

static void check_attributes() {
  cudaFuncAttributes a;
  CHECK(cudaFuncGetAttributes(&a, with_static_shared));
  printf("with_static_shared: sharedSizeBytes %zu\n", a.sharedSizeBytes);
  require(a.maxThreadsPerBlock >= 1024, "with_static_shared: maxThreadsPerBlock >= 1024");
  CHECK(cudaFuncGetAttributes(&a, bounded));
  printf("bounded: maxThreadsPerBlock %d, sharedSizeBytes %zu\n", a.maxThreadsPerBlock,
         a.sharedSizeBytes);
  CHECK(cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
  CHECK(cudaFuncGetAttributes(&a, plain));
  printf("plain: maxDynamicSharedSizeBytes after setting 65536: %d\n",
         a.maxDynamicSharedSizeBytes);
  CHECK(cudaFuncSetCacheConfig(plain, cudaFuncCachePreferL1));
}

int main() {
  check_occupancy();
  check_attributes();
  // The kernels run as well: the attributes above describe code that works.
  float *x;
  CHECK(cudaMallocManaged(&x, 1024 * sizeof(float)));
  for (int i = 0; i < 1024; ++i) x[i] = (float)i;
  with_static_shared<<<1, 1024>>>(x);
  bounded<<<8, 128>>>(x);
  CHECK(cudaDeviceSynchronize());
  float want[1024];
  for (int i = 0; i < 1024; ++i) want[i] = 2.0f * (1023 - i);
  expect_equal("kernels run", x, want, 1024);
  CHECK(cudaFree(x));
  return finish();
}
