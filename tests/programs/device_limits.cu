// Device-wide settings: limits, cache and shared memory configuration, stream priorities,
// cudaChooseDevice and cudaDeviceReset. Only that the calls succeed and that values read back
// are consistent is printed.
#include "common.h"

__global__ void add_one(int *x) { x[threadIdx.x] += 1; }

static void check_limits() {
  size_t stack = 0, fifo = 0, heap = 0;
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  require(stack > 0 && fifo > 0 && heap > 0, "stack, printf FIFO and heap limits > 0");
  CHECK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 4 << 20));
  CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  require(fifo >= (4u << 20), "printf FIFO limit >= what was set");
  printf("limits: ok\n");
}

static void check_configuration() {
  CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  cudaFuncCache cache;
  CHECK(cudaDeviceGetCacheConfig(&cache));
  CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferNone));
  int least = 0, greatest = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  require(greatest <= least, "greatest stream priority <= least");
  cudaStream_t s;
  CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
  int priority = 1;
  CHECK(cudaStreamGetPriority(s, &priority));
  require(priority == greatest, "stream priority reads back");
  unsigned flags = 0;
  CHECK(cudaStreamGetFlags(s, &flags));
  require(flags == cudaStreamNonBlocking, "stream flags read back");
  CHECK(cudaStreamDestroy(s));
  printf("configuration: ok\n");
}

static void check_choose_device() {
  cudaDeviceProp want = {};
  want.major = 1;
  int chosen = -1;
  CHECK(cudaChooseDevice(&chosen, &want));
  printf("chosen device: %d\n", chosen);
  unsigned flags = 0;
  CHECK(cudaGetDeviceFlags(&flags));
}

static void check_reset() {
  int *d = nullptr;
  CHECK(cudaMalloc(&d, 32 * sizeof(int)));
  CHECK(cudaMemset(d, 0, 32 * sizeof(int)));
  add_one<<<1, 32>>>(d);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaDeviceReset());
  // After a reset the runtime makes a fresh context on the next call.
  int host[32];
  CHECK(cudaMalloc(&d, sizeof host));
  CHECK(cudaMemset(d, 0, sizeof host));
  add_one<<<1, 32>>>(d);
  add_one<<<1, 32>>>(d);
  CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
  int want[32];
  for (int i = 0; i < 32; ++i) want[i] = 2;
  expect_equal("kernels after cudaDeviceReset", host, want, 32);
  CHECK(cudaFree(d));
}

int main() {
  check_limits();
  check_configuration();
  check_choose_device();
  check_reset();
  return finish();
}
