// The stream-ordered allocator, which a portable runtime may not have: cudaMallocAsync and
// cudaFreeAsync on two streams, allocations reused after a free, the device's default pool
// and its release threshold, and cudaMallocFromPoolAsync from a created pool. A runtime without
// memory pools must report cudaDevAttrMemoryPoolsSupported 0 or refuse with
// cudaErrorNotSupported and keep working (expected memory_pools.unsupported.txt); pools are
// judged whole, so a runtime with the default pool but no created ones fails.
#include <cstdint>
#include <vector>

#include "common.h"

__global__ void fill(int *x, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value + i;
}

#define TRY(call)                                           \
  do {                                                      \
    cudaError_t e_ = (call);                                \
    if (refused(e_, #call) || e_ != cudaSuccess) return e_; \
  } while (0)

static const int N = 1 << 16;

static bool check(const int *host, int value) {
  for (int i = 0; i < N; ++i)
    if (host[i] != value + i) return false;
  return true;
}

// Allocates, fills, copies out and frees on each of two streams, twice (wrong data reads as
// cudaErrorUnknown, so that the caller prints one line either way).
static cudaError_t default_pool(int *host) {
  cudaStream_t s[2];
  for (auto &stream : s) TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 2; ++k) {
      int *d;
      TRY(cudaMallocAsync(&d, N * sizeof(int), s[k]));
      fill<<<N / 256, 256, 0, s[k]>>>(d, N, 100 * (2 * round + k));
      TRY(cudaMemcpyAsync(host + k * N, d, N * sizeof(int), cudaMemcpyDeviceToHost, s[k]));
      TRY(cudaFreeAsync(d, s[k]));
      TRY(cudaStreamSynchronize(s[k]));
      if (!check(host + k * N, 100 * (2 * round + k))) return cudaErrorUnknown;
    }
  cudaMemPool_t pool;
  TRY(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = 1 << 20;
  TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  TRY(cudaMemPoolTrimTo(pool, 0));
  for (auto &stream : s) TRY(cudaStreamDestroy(stream));
  return cudaSuccess;
}

static cudaError_t created_pool(int *host) {
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  TRY(cudaMemPoolCreate(&pool, &props));
  int *d;
  TRY(cudaMallocFromPoolAsync((void **)&d, N * sizeof(int), pool, 0));
  fill<<<N / 256, 256>>>(d, N, 7);
  TRY(cudaMemcpyAsync(host, d, N * sizeof(int), cudaMemcpyDeviceToHost, 0));
  TRY(cudaFreeAsync(d, 0));
  TRY(cudaStreamSynchronize(0));
  if (!check(host, 7)) return cudaErrorUnknown;
  return cudaMemPoolDestroy(pool);
}

static int after_refusal() {
  cudaGetLastError();
  printf("memory pools: cudaErrorNotSupported\n");
  int *d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  CHECK(cudaFree(d));
  printf("runtime works after the refusal: ok\n");
  return finish();
}

int main() {
  int supported = 0;
  CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
  if (!supported) return after_refusal();
  std::vector<int> host(2 * N);
  cudaError_t e = default_pool(host.data());
  if (e == cudaErrorNotSupported) return after_refusal();
  expect_error("cudaMallocAsync and cudaFreeAsync on two streams", e, cudaSuccess);
  e = created_pool(host.data());
  if (e == cudaErrorNotSupported) return after_refusal();
  expect_error("cudaMallocFromPoolAsync from a created pool", e, cudaSuccess);
  return finish();
}
