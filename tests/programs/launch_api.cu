// The ways a host program launches a kernel: <<<grid, block, shared, stream>>>, cudaLaunchKernel
// with an argument array, cudaLaunchKernelEx with a cudaLaunchConfig_t (the C++ template and
// the C form cudaLaunchKernelExC), and a kernel reached through a function pointer, with 3D
// grids and blocks throughout; then the kernel's driver handle (cudaGetFuncBySymbol) and its
// mangled name (cudaFuncGetName).
#include <cstring>
#include <vector>

#include "common.h"

// Writes its linear thread index plus `add` at the thread's global 3D position.
__global__ void stamp(int *out, int add) {
  extern __shared__ int scratch[];
  int tx = blockIdx.x * blockDim.x + threadIdx.x, ty = blockIdx.y * blockDim.y + threadIdx.y,
      tz = blockIdx.z * blockDim.z + threadIdx.z;
  int width = gridDim.x * blockDim.x, height = gridDim.y * blockDim.y;
  int flat = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  scratch[flat] = flat;
  __syncthreads();
  out[(tz * height + ty) * width + tx] = scratch[flat] + add;
}

const dim3 GRID(3, 2, 2), BLOCK(8, 4, 2);
const int TOTAL = 3 * 8 * 2 * 4 * 2 * 2;
const size_t SHARED = 8 * 4 * 2 * sizeof(int);

static void expect_stamps(const char *label, int *d, int add) {
  std::vector<int> got(TOTAL), want(TOTAL);
  CHECK(cudaMemcpy(got.data(), d, TOTAL * sizeof(int), cudaMemcpyDeviceToHost));
  const int width = 24, height = 8;
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        want[(z * height + y) * width + x] = x % 8 + 8 * (y % 4 + 4 * (z % 2)) + add;
  expect_equal(label, got.data(), want.data(), TOTAL);
  CHECK(cudaMemset(d, 0, TOTAL * sizeof(int)));
}

int main() {
  int *d;
  CHECK(cudaMalloc(&d, TOTAL * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));

  stamp<<<GRID, BLOCK, SHARED, s>>>(d, 1);
  CHECK(cudaStreamSynchronize(s));
  expect_stamps("triple chevrons", d, 1);

  int add = 2;
  void *args[] = {&d, &add};
  CHECK(cudaLaunchKernel((const void *)stamp, GRID, BLOCK, args, SHARED, s));
  CHECK(cudaStreamSynchronize(s));
  expect_stamps("cudaLaunchKernel", d, 2);

  cudaLaunchConfig_t config = {};
  config.gridDim = GRID;
  config.blockDim = BLOCK;
  config.dynamicSmemBytes = SHARED;
  config.stream = s;
  CHECK(cudaLaunchKernelEx(&config, stamp, d, 3));
  CHECK(cudaStreamSynchronize(s));
  expect_stamps("cudaLaunchKernelEx", d, 3);

  add = 4;
  CHECK(cudaLaunchKernelExC(&config, (const void *)stamp, args));
  CHECK(cudaStreamSynchronize(s));
  expect_stamps("cudaLaunchKernelExC", d, 4);

  void (*pointer)(int *, int) = stamp;
  pointer<<<GRID, BLOCK, SHARED, s>>>(d, 5);
  CHECK(cudaStreamSynchronize(s));
  expect_stamps("through a function pointer", d, 5);

  cudaFunction_t handle;
  CHECK(cudaGetFuncBySymbol(&handle, (const void *)stamp));
  require(handle != nullptr, "cudaGetFuncBySymbol gives a handle");
  const char *name = nullptr;
  CHECK(cudaFuncGetName(&name, (const void *)stamp));
  printf("cudaFuncGetName: %s\n", name);

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  return finish();
}
