// Managed memory: cudaMallocManaged (global and host attachment) used by host and kernels in
// turn, a __managed__ variable updated by atomics and read directly by the host, and
// cudaPointerGetAttributes reporting managed memory.
#include <vector>

#include "common.h"

__managed__ int m_total = 0;
__managed__ float m_weights[8] = {1, 2, 3, 4, 5, 6, 7, 8};

__global__ void weighted_sum(const int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&m_total, x[i] * (int)m_weights[i % 8]);
}

__global__ void increment(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

int main() {
  const int n = 50000;
  int *x;
  CHECK(cudaMallocManaged(&x, n * sizeof(int)));
  for (int i = 0; i < n; ++i) x[i] = i % 97;
  increment<<<(n + 255) / 256, 256>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want(n);
  for (int i = 0; i < n; ++i) want[i] = i % 97 + 1;
  expect_equal("host, kernel, host on cudaMallocManaged", x, want.data(), n);

  m_weights[7] = 10;
  weighted_sum<<<(n + 255) / 256, 256>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  long long total = 0;
  for (int i = 0; i < n; ++i) total += (long long)want[i] * (i % 8 == 7 ? 10 : i % 8 + 1);
  printf("__managed__ total: %d (host reference %lld)\n", m_total, total);
  require(m_total == total, "__managed__ total equals the host's");

  int *attached;
  CHECK(cudaMallocManaged(&attached, 1024 * sizeof(int), cudaMemAttachHost));
  for (int i = 0; i < 1024; ++i) attached[i] = -i;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaStreamAttachMemAsync(s, attached, 0, cudaMemAttachSingle));
  increment<<<4, 256, 0, s>>>(attached, 1024);
  CHECK(cudaStreamSynchronize(s));
  std::vector<int> want_attached(1024);
  for (int i = 0; i < 1024; ++i) want_attached[i] = 1 - i;
  expect_equal("cudaMemAttachHost + cudaStreamAttachMemAsync", attached,
               want_attached.data(), 1024);

  cudaPointerAttributes a;
  CHECK(cudaPointerGetAttributes(&a, x));
  printf("managed pointer: type %d\n", (int)a.type);
  require(a.type == cudaMemoryTypeManaged, "managed pointer type");
  int *m_total_address = nullptr;
  CHECK(cudaGetSymbolAddress((void **)&m_total_address, m_total));
  require(m_total_address == &m_total, "__managed__ symbol address is the host's");

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(x));
  CHECK(cudaFree(attached));
  return finish();
}
