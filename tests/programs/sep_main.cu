// Several translation units compiled whole (no -rdc): sep_scale.cu and sep_stats.cu each
// carry their own fat binary with their own kernels. Both define a kernel named `apply` and a
// constant named `c_param` with internal linkage, so the runtime must keep each module's
// names apart.
#include <vector>

#include "common.h"

void scale_on_device(float *x, int n, float factor);   // sep_scale.cu
void shift_on_device(float *x, int n, float offset);   // sep_stats.cu
double sum_on_device(const float *x, int n);           // sep_stats.cu

__global__ void fill(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (float)(i % 64);
}

int main() {
  const int n = 8192;
  float *x;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  fill<<<n / 256, 256>>>(x, n);
  scale_on_device(x, n, 2.0f);
  shift_on_device(x, n, -3.0f);
  std::vector<float> got(n), want(n);
  CHECK(cudaMemcpy(got.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  double reference = 0;
  for (int i = 0; i < n; ++i) {
    want[i] = (float)(i % 64) * 2.0f - 3.0f;
    reference += want[i];
  }
  expect_equal("kernels of three translation units", got.data(), want.data(), n);
  double sum = sum_on_device(x, n);
  printf("sum: %.1f (host %.1f)\n", sum, reference);
  require(sum == reference, "device sum equals host sum");
  CHECK(cudaFree(x));
  return finish();
}
