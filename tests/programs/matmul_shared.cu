// Tiled matrix multiplication in static shared memory with __syncthreads between tile
// phases, for sizes that are not multiples of the tile, in float (integer-valued inputs, so
// the result is exact) and in double.
#include <vector>

#include "common.h"

const int TILE = 16;

template <typename T>
__global__ void matmul(const T *a, const T *b, T *c, int m, int k, int n) {
  __shared__ T ta[TILE][TILE], tb[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  T sum = 0;
  for (int t = 0; t < k; t += TILE) {
    ta[threadIdx.y][threadIdx.x] = row < m && t + threadIdx.x < k ? a[row * k + t + threadIdx.x] : 0;
    tb[threadIdx.y][threadIdx.x] = col < n && t + threadIdx.y < k ? b[(t + threadIdx.y) * n + col] : 0;
    __syncthreads();
    for (int j = 0; j < TILE; ++j) sum += ta[threadIdx.y][j] * tb[j][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = sum;
}

template <typename T> static void run(const char *label, int m, int k, int n) {
  std::vector<T> a(m * k), b(k * n), c(m * n), want(m * n, 0);
  for (int i = 0; i < m * k; ++i) a[i] = (T)(i % 7 - 3);
  for (int i = 0; i < k * n; ++i) b[i] = (T)(i % 5 - 2);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) want[i * n + j] += a[i * k + p] * b[p * n + j];
  T *da, *db, *dc;
  CHECK(cudaMalloc(&da, a.size() * sizeof(T)));
  CHECK(cudaMalloc(&db, b.size() * sizeof(T)));
  CHECK(cudaMalloc(&dc, c.size() * sizeof(T)));
  CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(T), cudaMemcpyHostToDevice));
  dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE), block(TILE, TILE);
  matmul<T><<<grid, block>>>(da, db, dc, m, k, n);
  CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(T), cudaMemcpyDeviceToHost));
  expect_equal(label, c.data(), want.data(), c.size());
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
}

int main() {
  run<float>("float 100x70 * 70x45", 100, 70, 45);
  run<float>("float 128x128 * 128x128", 128, 128, 128);
  run<double>("double 33x17 * 17x65", 33, 17, 65);
  return finish();
}
