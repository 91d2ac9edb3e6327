// Separate compilation (-rdc=true, device-linked by nvcc): this file's kernel calls a device
// function defined in rdc_math.cu and reads a __device__ table defined in rdc_data.cu; a
// kernel of rdc_data.cu is launched from here, and a __constant__ of rdc_math.cu is set
// through a host function of that file.
#include <vector>

#include "common.h"
#include "rdc_shared.h"

__global__ void apply_mix(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mix(in[i], g_table[i % TABLE_SIZE]);
}

int main() {
  const int n = 3000;
  set_mix_salt(17);
  int *table;
  CHECK(cudaGetSymbolAddress((void **)&table, g_table));
  fill_table<<<1, TABLE_SIZE>>>(table);
  CHECK(cudaGetLastError());

  std::vector<int> in(n), out(n), want(n);
  for (int i = 0; i < n; ++i) in[i] = i * 31 - 1000;
  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  apply_mix<<<(n + 127) / 128, 128>>>(d_in, d_out, n);
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) want[i] = mix_reference(in[i], table_reference(i % TABLE_SIZE), 17);
  expect_equal("kernel calling across translation units", out.data(), want.data(), n);

  int calls = 0;
  CHECK(cudaMemcpyFromSymbol(&calls, g_mix_calls, sizeof calls));
  printf("device calls counted in rdc_math.cu: %d\n", calls);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return finish();
}
