// CUDA's math library in kernels against the host's libm, within each function's documented
// error bound (a few ulp; the fast intrinsics with their own bounds): sqrt, division, exp,
// log, sin/cos, pow, tanh, erf, fma and rounding in float and double, plus the intrinsics
// __expf, __sinf, __fdividef and __saturatef, and integer division and remainder by negatives.
#include <cmath>
#include <vector>

#include "common.h"

const int FUNCS_F = 12, FUNCS_D = 8;

__global__ void float_math(const float *x, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float *o = out + i * FUNCS_F;
  o[0] = sqrtf(fabsf(v));
  o[1] = 1.0f / (v + 10.5f);
  o[2] = expf(v / 8.0f);
  o[3] = logf(fabsf(v) + 1.0f);
  o[4] = sinf(v);
  o[5] = cosf(v);
  o[6] = powf(fabsf(v) + 0.5f, 1.5f);
  o[7] = tanhf(v / 4.0f);
  o[8] = erff(v / 4.0f);
  o[9] = __expf(v / 8.0f);
  o[10] = __sinf(v);
  o[11] = __fdividef(v, 3.0f) + __saturatef(v / 10.0f) + rintf(v) + floorf(v) + truncf(v);
}

__global__ void double_math(const double *x, double *out, long long *ints, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  double *o = out + i * FUNCS_D;
  o[0] = sqrt(fabs(v));
  o[1] = exp(v / 8.0);
  o[2] = log1p(fabs(v));
  o[3] = sin(v) * cos(v);
  o[4] = pow(fabs(v) + 0.5, 2.25);
  o[5] = atan2(v, 3.0);
  o[6] = fma(v, v, -2.0);
  o[7] = cbrt(v);
  long long a = (long long)(v * 1000.0), b = -7;
  ints[2 * i] = a / b;
  ints[2 * i + 1] = a % b;
}

int main() {
  const int n = 2000;
  std::vector<float> xf(n), outf(n * FUNCS_F), wantf(n * FUNCS_F);
  std::vector<double> xd(n), outd(n * FUNCS_D), wantd(n * FUNCS_D);
  std::vector<long long> ints(2 * n), want_ints(2 * n);
  for (int i = 0; i < n; ++i) xf[i] = (i - n / 2) * 0.0137f, xd[i] = (i - n / 2) * 0.0091;
  float *dxf, *doutf;
  double *dxd, *doutd;
  long long *dints;
  CHECK(cudaMalloc(&dxf, n * sizeof(float)));
  CHECK(cudaMalloc(&doutf, outf.size() * sizeof(float)));
  CHECK(cudaMalloc(&dxd, n * sizeof(double)));
  CHECK(cudaMalloc(&doutd, outd.size() * sizeof(double)));
  CHECK(cudaMalloc(&dints, ints.size() * sizeof(long long)));
  CHECK(cudaMemcpy(dxf, xf.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dxd, xd.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  float_math<<<(n + 127) / 128, 128>>>(dxf, doutf, n);
  double_math<<<(n + 127) / 128, 128>>>(dxd, doutd, dints, n);
  CHECK(cudaMemcpy(outf.data(), doutf, outf.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(outd.data(), doutd, outd.size() * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ints.data(), dints, ints.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    double v = xf[i];
    float *o = &wantf[i * FUNCS_F];
    o[0] = sqrt(fabs(v)), o[1] = 1.0 / (v + 10.5), o[2] = exp(v / 8), o[3] = log(fabs(v) + 1);
    o[4] = sin(v), o[5] = cos(v), o[6] = pow(fabs(v) + 0.5, 1.5), o[7] = tanh(v / 4);
    o[8] = erf(v / 4), o[9] = exp(v / 8), o[10] = sin(v);
    o[11] = v / 3 + fmin(fmax(v / 10, 0.0), 1.0) + rint(v) + floor(v) + trunc(v);
    double u = xd[i];
    double *w = &wantd[i * FUNCS_D];
    w[0] = sqrt(fabs(u)), w[1] = exp(u / 8), w[2] = log1p(fabs(u)), w[3] = sin(u) * cos(u);
    w[4] = pow(fabs(u) + 0.5, 2.25), w[5] = atan2(u, 3.0), w[6] = fma(u, u, -2.0);
    w[7] = cbrt(u);
    long long a = (long long)(u * 1000.0);
    want_ints[2 * i] = a / -7, want_ints[2 * i + 1] = a % -7;
  }
  // Bounds: float functions within 4 ulp-ish (2e-6 relative), the intrinsics 1e-5 relative
  // over this range (absolute near zero), doubles within 1e-14.
  std::vector<float> precise, fast, precise_want, fast_want;
  for (int i = 0; i < n; ++i)
    for (int f = 0; f < FUNCS_F; ++f) {
      bool is_fast = f == 9 || f == 10;
      (is_fast ? fast : precise).push_back(outf[i * FUNCS_F + f]);
      (is_fast ? fast_want : precise_want).push_back(wantf[i * FUNCS_F + f]);
    }
  expect_close("float math functions", precise.data(), precise_want.data(), precise.size(), 2e-6);
  expect_close("float intrinsics", fast.data(), fast_want.data(), fast.size(), 1e-5);
  expect_close("double math functions", outd.data(), wantd.data(), outd.size(), 1e-14);
  expect_equal("long long division and remainder by -7", ints.data(), want_ints.data(),
               ints.size());
  for (void *p : {(void *)dxf, (void *)doutf, (void *)dxd, (void *)doutd, (void *)dints})
    CHECK(cudaFree(p));
  return finish();
}
