// Memory pools' own API, beyond allocating: the default and current pool of a device, a
// created pool as the device's current one (cudaMallocAsync then takes from it), its
// counters (reserved and used memory, current and high-water, the high-water marks reset to
// the current value), the release threshold, cudaMemPoolTrimTo, what cannot be set, and the
// default pool becoming current again when the current pool is destroyed. Only what CUDA
// promises is checked: how much a pool reserves beyond what is used is its own business.
#include <cstdint>

#include "common.h"

__global__ void fill(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 3 * i;
}

static uint64_t attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t value = 0;
  CHECK(cudaMemPoolGetAttribute(pool, attr, &value));
  return value;
}

int main() {
  int supported = 0;
  CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
  require(supported == 1, "memory pools supported");
  cudaMemPool_t defaults, current;
  CHECK(cudaDeviceGetDefaultMemPool(&defaults, 0));
  CHECK(cudaDeviceGetMemPool(&current, 0));
  require(defaults == current, "the default pool is the current one at first");

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t keep_all = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  require(attribute(pool, cudaMemPoolAttrReleaseThreshold) == UINT64_MAX,
          "the release threshold reads back");

  // the created pool as the device's current one: cudaMallocAsync takes from it
  CHECK(cudaDeviceSetMemPool(0, pool));
  CHECK(cudaDeviceGetMemPool(&current, 0));
  require(current == pool, "the created pool is current");
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int n = 1 << 18;
  const size_t bytes = n * sizeof(int);
  int *x = nullptr;
  CHECK(cudaMallocAsync((void **)&x, bytes, s));
  fill<<<(n + 255) / 256, 256, 0, s>>>(x, n);
  int last = 0;
  CHECK(cudaMemcpyAsync(&last, x + n - 1, sizeof(int), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  printf("kernel wrote pool memory: %s\n", last == 3 * (n - 1) ? "ok" : "no");
  require(last == 3 * (n - 1), "the kernel's write is read back");
  require(attribute(pool, cudaMemPoolAttrUsedMemCurrent) >= bytes, "used >= the allocation");
  require(attribute(pool, cudaMemPoolAttrReservedMemCurrent) >=
              attribute(pool, cudaMemPoolAttrUsedMemCurrent), "reserved >= used");
  CHECK(cudaFreeAsync(x, s));
  CHECK(cudaStreamSynchronize(s));
  printf("used after the free: %llu\n",
         (unsigned long long)attribute(pool, cudaMemPoolAttrUsedMemCurrent));
  require(attribute(pool, cudaMemPoolAttrUsedMemHigh) >= bytes, "used high >= the allocation");
  require(attribute(pool, cudaMemPoolAttrReservedMemCurrent) >= bytes,
          "the freed memory is kept (threshold: all)");

  // high-water marks reset to the current value; counters cannot be set
  uint64_t zero = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  printf("used high after its reset: %llu\n",
         (unsigned long long)attribute(pool, cudaMemPoolAttrUsedMemHigh));
  expect_error("set reserved current",
               cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &zero),
               cudaErrorInvalidValue);

  // trimming releases what no allocation uses
  CHECK(cudaMemPoolTrimTo(pool, 0));
  printf("reserved after trimming to 0: %llu\n",
         (unsigned long long)attribute(pool, cudaMemPoolAttrReservedMemCurrent));

  // an allocation from the pool by name, on another stream
  int *y = nullptr;
  CHECK(cudaMallocFromPoolAsync((void **)&y, 4096, pool, 0));
  CHECK(cudaMemsetAsync(y, 0, 4096, 0));
  CHECK(cudaFreeAsync(y, 0));
  CHECK(cudaDeviceSynchronize());

  // destroying the current pool makes the default current again
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaDeviceGetMemPool(&current, 0));
  require(current == defaults, "the default pool is current after the destroy");
  printf("current pool after the destroy is the default: %s\n",
         current == defaults ? "yes" : "no");
  CHECK(cudaStreamDestroy(s));
  return finish();
}
