// Templates and C++ names: one kernel template instantiated for int, float, double and
// unsigned char, with functor and non-type parameters (so its PTX names are mangled), kernels
// in a namespace, and overloaded kernels that share a name.
#include <vector>

#include "common.h"

struct Square {
  template <typename T> __device__ __host__ T operator()(T x) const { return x * x; }
};
struct Negate {
  template <typename T> __device__ __host__ T operator()(T x) const { return -x; }
};

template <typename T, typename Op, int UNROLL>
__global__ void transform(const T *in, T *out, int n) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
  for (int k = 0; k < UNROLL; ++k)
    if (base + k < n) out[base + k] = Op()(in[base + k]);
}

namespace numeric {
__global__ void iota(int *out, int start) { out[threadIdx.x] = start + threadIdx.x; }
namespace detail {
__global__ void iota(int *out, int start) { out[threadIdx.x] = start - (int)threadIdx.x; }
}  // namespace detail
}  // namespace numeric

__global__ void tag(int *out) { out[threadIdx.x] = 1; }
__global__ void tag(float *out) { out[threadIdx.x] = 2.5f; }

template <typename T, typename Op, int UNROLL> static void run(const char *label, int n) {
  std::vector<T> in(n), out(n), want(n);
  for (int i = 0; i < n; ++i) in[i] = (T)(i % 23);
  T *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_out, n * sizeof(T)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  int threads = (n + UNROLL - 1) / UNROLL;
  transform<T, Op, UNROLL><<<(threads + 63) / 64, 64>>>(d_in, d_out, n);
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(T), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) want[i] = Op()(in[i]);
  expect_equal(label, out.data(), want.data(), n);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
}

static void namespaces_and_overloads() {
  int *d;
  float *f;
  CHECK(cudaMalloc(&d, 64 * sizeof(int)));
  CHECK(cudaMalloc(&f, 32 * sizeof(float)));
  numeric::iota<<<1, 32>>>(d, 100);
  numeric::detail::iota<<<1, 32>>>(d + 32, 100);
  int got[64], want[64];
  CHECK(cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) want[i] = 100 + i, want[32 + i] = 100 - i;
  expect_equal("numeric::iota and numeric::detail::iota", got, want, 64);
  tag<<<1, 32>>>(d);
  tag<<<1, 32>>>(f);
  float gotf[32], wantf[32];
  CHECK(cudaMemcpy(got, d, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(gotf, f, sizeof gotf, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) want[i] = 1, wantf[i] = 2.5f;
  expect_equal("tag(int *)", got, want, 32);
  expect_equal("tag(float *)", gotf, wantf, 32);
  CHECK(cudaFree(d));
  CHECK(cudaFree(f));
}

int main() {
  run<int, Square, 1>("transform<int, Square, 1>", 1000);
  run<int, Negate, 4>("transform<int, Negate, 4>", 1001);
  run<float, Square, 2>("transform<float, Square, 2>", 777);
  run<double, Negate, 3>("transform<double, Negate, 3>", 500);
  run<unsigned char, Square, 8>("transform<unsigned char, Square, 8>", 4099);
  namespaces_and_overloads();
  return finish();
}
