// __device__ and __constant__ symbols: static initialisers, cudaMemcpyToSymbol and
// cudaMemcpyFromSymbol (with offsets, sync and async), cudaGetSymbolAddress and
// cudaGetSymbolSize, and kernels reading constant memory and writing device globals.
#include <vector>

#include "common.h"

struct Polynomial {
  float coefficients[4];
  int degree;
};

__constant__ Polynomial c_poly;
__constant__ int c_table[256];
__device__ int d_counter = 42;
__device__ unsigned d_initialised[4] = {1u, 2u, 3u, 0xDEADBEEFu};
__device__ float d_results[512];

__global__ void evaluate(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = (float)i / 64.0f, y = 0.0f;
  for (int k = c_poly.degree; k >= 0; --k) y = y * x + c_poly.coefficients[k];
  d_results[i] = y + (float)c_table[i % 256];
  atomicAdd(&d_counter, 1);
}

static void check_initialisers() {
  int counter = 0;
  unsigned init[4];
  CHECK(cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter));
  CHECK(cudaMemcpyFromSymbol(init, d_initialised, sizeof init));
  printf("d_counter initialiser: %d\n", counter);
  printf("d_initialised initialiser: %u %u %u %#x\n", init[0], init[1], init[2], init[3]);
}

static void upload_constants(std::vector<int> &table) {
  Polynomial p = {{0.5f, -1.0f, 0.25f, 0.125f}, 3};
  CHECK(cudaMemcpyToSymbol(c_poly, &p, sizeof p));
  for (int i = 0; i < 256; ++i) table[i] = i * 3 - 100;
  // The table in two halves: the second at an offset, asynchronously.
  CHECK(cudaMemcpyToSymbol(c_table, table.data(), 128 * sizeof(int)));
  CHECK(cudaMemcpyToSymbolAsync(c_table, table.data() + 128, 128 * sizeof(int),
                                128 * sizeof(int), cudaMemcpyHostToDevice, 0));
}

int main() {
  check_initialisers();
  std::vector<int> table(256);
  upload_constants(table);
  const int n = 512;
  evaluate<<<n / 128, 128>>>(n);
  CHECK(cudaGetLastError());

  std::vector<float> got(n), want(n);
  CHECK(cudaMemcpyFromSymbol(got.data(), d_results, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    float x = (float)i / 64.0f;
    want[i] = ((0.125f * x + 0.25f) * x - 1.0f) * x + 0.5f + (float)table[i % 256];
  }
  expect_close("constant-memory polynomial", got.data(), want.data(), n, 1e-5);

  int counter = 0;
  CHECK(cudaMemcpyFromSymbolAsync(&counter, d_counter, sizeof counter, 0,
                                  cudaMemcpyDeviceToHost, 0));
  CHECK(cudaStreamSynchronize(0));
  printf("d_counter after kernel: %d\n", counter);

  float *address = nullptr;
  size_t size = 0;
  CHECK(cudaGetSymbolAddress((void **)&address, d_results));
  CHECK(cudaGetSymbolSize(&size, d_results));
  printf("cudaGetSymbolSize(d_results): %zu\n", size);
  CHECK(cudaMemset(address + 100, 0, 4 * sizeof(float)));
  float tail[8];
  CHECK(cudaMemcpyFromSymbol(tail, d_results, sizeof tail, 98 * sizeof(float)));
  float tail_want[8] = {want[98], want[99], 0, 0, 0, 0, want[104], want[105]};
  expect_close("cudaMemset through cudaGetSymbolAddress", tail, tail_want, 8, 1e-5);
  return finish();
}
