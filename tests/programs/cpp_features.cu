// C++ on the device: extended __device__ lambdas passed to a kernel template (needs
// --extended-lambda), virtual functions on objects built on the device, recursion (a
// recursive device function needs a call stack), a __host__ __device__ function used on
// both sides, a constexpr device table, and a class with a constructor and operators in a kernel.
#include <vector>

#include "common.h"

template <typename F> __global__ void apply(int *x, int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = f(x[i], i);
}

struct Shape {
  __device__ virtual int area() const = 0;
  __device__ virtual ~Shape() {}
};
struct Rect : Shape {
  int w, h;
  __device__ Rect(int w_, int h_) : w(w_), h(h_) {}
  __device__ int area() const override { return w * h; }
};
struct Tri : Shape {
  int b, h;
  __device__ Tri(int b_, int h_) : b(b_), h(h_) {}
  __device__ int area() const override { return b * h / 2; }
};

__global__ void areas(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Rect r(i % 7 + 1, 3);
  Tri t(i % 5 + 2, 4);
  const Shape *s = (i % 2) ? static_cast<const Shape *>(&r) : static_cast<const Shape *>(&t);
  out[i] = s->area();
}

__device__ int ackermann_small(int m, int n) {
  if (m == 0) return n + 1;
  if (n == 0) return ackermann_small(m - 1, 1);
  return ackermann_small(m - 1, ackermann_small(m, n - 1));
}

__global__ void recursive(int *out) { out[threadIdx.x] = ackermann_small(threadIdx.x % 3, threadIdx.x % 4); }

__host__ __device__ constexpr int triangular(int k) { return k * (k + 1) / 2; }
__device__ constexpr int kTable[4] = {triangular(1), triangular(2), triangular(3), triangular(4)};

struct Vec2 {
  int x, y;
  __host__ __device__ Vec2 operator+(Vec2 o) const { return {x + o.x, y + o.y}; }
  __host__ __device__ int dot(Vec2 o) const { return x * o.x + y * o.y; }
};

__global__ void vectors(int *out) {
  Vec2 a{(int)threadIdx.x, 2}, b{3, (int)threadIdx.x};
  out[threadIdx.x] = (a + b).dot(a) + kTable[threadIdx.x % 4] + triangular(threadIdx.x);
}

static int ackermann_host(int m, int n) {
  if (m == 0) return n + 1;
  if (n == 0) return ackermann_host(m - 1, 1);
  return ackermann_host(m - 1, ackermann_host(m, n - 1));
}

int main() {
  const int n = 1000;
  int *x;
  CHECK(cudaMallocManaged(&x, n * sizeof(int)));
  for (int i = 0; i < n; ++i) x[i] = i;
  int offset = 17;
  apply<<<(n + 127) / 128, 128>>>(x, n, [=] __device__(int v, int i) { return v * v - i + offset; });
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want(n);
  for (int i = 0; i < n; ++i) want[i] = i * i - i + 17;
  expect_equal("extended __device__ lambda", x, want.data(), n);

  areas<<<(n + 127) / 128, 128>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i) want[i] = (i % 2) ? (i % 7 + 1) * 3 : (i % 5 + 2) * 4 / 2;
  expect_equal("virtual functions", x, want.data(), n);

  recursive<<<1, 12>>>(x);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < 12; ++i) want[i] = ackermann_host(i % 3, i % 4);
  expect_equal("recursion", x, want.data(), 12);

  vectors<<<1, 64>>>(x);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < 64; ++i) {
    Vec2 a{i, 2}, b{3, i};
    want[i] = (a + b).dot(a) + triangular(i % 4 + 1) + triangular(i);
  }
  expect_equal("constexpr, __host__ __device__ and operators", x, want.data(), 64);
  CHECK(cudaFree(x));
  return finish();
}
