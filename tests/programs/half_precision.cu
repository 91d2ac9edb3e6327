// Half and bfloat16 arithmetic (cuda_fp16.h, cuda_bf16.h): conversions with round-to-nearest,
// __half2 vector add, multiply and fma, comparisons, and a float accumulation of halves. Inputs
// are chosen so that every result is exact in its format (small integers and halves), so the
// device must agree bit for bit with the host's conversions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <vector>

#include "common.h"

__global__ void half_ops(const float *x, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half h = __float2half_rn(x[i]);
  __half2 pair = __halves2half2(h, __float2half_rn(x[i] * 0.5f));
  __half2 two = __float2half2_rn(2.0f);
  __half2 sum = __hadd2(pair, two);
  __half2 product = __hmul2(pair, two);
  __half2 fused = __hfma2(pair, two, sum);
  float *o = out + i * 8;
  o[0] = __half2float(h);
  o[1] = __low2float(sum);
  o[2] = __high2float(sum);
  o[3] = __low2float(product);
  o[4] = __high2float(fused);
  o[5] = __hgt(h, __float2half_rn(0.0f)) ? 1.0f : -1.0f;
  __nv_bfloat16 b = __float2bfloat16_rn((float)(i % 64));  // bfloat16 holds 8 bits exactly
  o[6] = __bfloat162float(__hadd(b, __float2bfloat16_rn(1.0f)));
  o[7] = __half2float(__hneg(h));
}

__global__ void half_sum(const __half *x, int n, float *total) {
  __shared__ float partial[256];
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += __half2float(x[i]);
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k /= 2) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) *total = partial[0];
}

int main() {
  const int n = 1000;
  std::vector<float> x(n), want(n * 8);
  for (int i = 0; i < n; ++i) x[i] = (float)(i % 200 - 100) * 0.5f;
  for (int i = 0; i < n; ++i) {
    float v = x[i], w = v * 0.5f;
    float *o = &want[i * 8];
    o[0] = v, o[1] = v + 2, o[2] = w + 2, o[3] = v * 2, o[4] = w * 2 + (w + 2);
    o[5] = v > 0 ? 1.0f : -1.0f, o[6] = (float)(i % 64 + 1), o[7] = -v;
  }
  float *dx, *out;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMallocManaged(&out, n * 8 * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  half_ops<<<(n + 127) / 128, 128>>>(dx, out, n);
  CHECK(cudaDeviceSynchronize());
  expect_equal("half and bfloat16 operations (exact)", out, want.data(), want.size());

  std::vector<__half> halves(n);
  float want_total = 0;
  for (int i = 0; i < n; ++i) halves[i] = __float2half(x[i]), want_total += x[i];
  __half *dh;
  float *total;
  CHECK(cudaMalloc(&dh, n * sizeof(__half)));
  CHECK(cudaMallocManaged(&total, sizeof(float)));
  CHECK(cudaMemcpy(dh, halves.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  half_sum<<<1, 256>>>(dh, n, total);
  CHECK(cudaDeviceSynchronize());
  expect_equal("float sum of halves", total, &want_total, 1);
  return finish();
}
