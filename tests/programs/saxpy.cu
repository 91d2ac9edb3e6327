// The smallest whole program, as CUDA's introductions write it: allocate, copy in, launch
// saxpy, copy out, check. Built with static and with shared cudart (the manifest's saxpy and
// saxpy_shared_cudart), so that both ways a program reaches CUDA are covered by one source.
#include <vector>

#include "common.h"

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 1 << 20;
  std::vector<float> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) x[i] = (float)(i % 1024), y[i] = (float)(i % 77), want[i] = 2.0f * x[i] + y[i];
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  expect_equal("saxpy of 1048576 floats", y.data(), want.data(), n);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return finish();
}
