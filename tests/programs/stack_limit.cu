// cudaLimitStackSize: each thread's stack, which recursion through local memory uses. A
// recursive function keeps a 64-int local array whose address it passes down (so the array
// is on the stack, 256 bytes a level and more); 40 levels need more than CUDA's default of
// 1 KiB, so the program raises the limit first and reads it back. With `--overflow` it
// lowers the limit again and runs the same recursion, which cannot fit: what a device does
// then is not NVIDIA's documented behaviour (tests/compat/test_stack_limit_program.py checks
// ptxport's error), so only the error's name is printed, and the default run does not do it.
#include <cstring>

#include "common.h"

constexpr int kDepth = 40, kLocal = 64, kThreads = 32;

// Sums depth + i for i < kLocal at every level from `depth` down to 0; `above` is the
// caller's array, which this level reads back through its address.
__device__ __noinline__ long long sum_levels(volatile int *above, int depth) {
  volatile int local[kLocal];
  for (int i = 0; i < kLocal; ++i) local[i] = depth + i;
  long long below = depth > 0 ? sum_levels(local, depth - 1) : 0;
  long long mine = 0;
  for (int i = 0; i < kLocal; ++i) mine += local[i];
  if (above != nullptr) above[0] = above[0];   // the caller's array, reached by address
  return mine + below;
}

__global__ void levels(long long *out, int depth) {
  out[threadIdx.x] = sum_levels(nullptr, depth + threadIdx.x % 2);
}

static long long expected_sum(int depth) {
  long long total = 0;
  for (int d = 0; d <= depth; ++d)
    for (int i = 0; i < kLocal; ++i) total += d + i;
  return total;
}

int main(int argc, char **argv) {
  bool overflow = argc > 1 && strcmp(argv[1], "--overflow") == 0;
  size_t stack = 0;
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  require(stack > 0, "the default stack limit > 0");
  fprintf(stderr, "note: default cudaLimitStackSize %zu\n", stack);
  const size_t want = 32 << 10;
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, want));
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  require(stack >= want, "the stack limit reads back at least what was set");
  fprintf(stderr, "note: cudaLimitStackSize after setting %zu: %zu\n", want, stack);
  printf("stack limit: ok\n");

  long long *out;
  CHECK(cudaMalloc(&out, kThreads * sizeof(long long)));
  levels<<<2, kThreads>>>(out, kDepth);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  long long got[kThreads], want_sums[kThreads];
  CHECK(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
  for (int t = 0; t < kThreads; ++t) want_sums[t] = expected_sum(kDepth + t % 2);
  expect_equal("recursion within the limit", got, want_sums, kThreads);

  if (overflow) {
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 1024));
    levels<<<1, kThreads>>>(out, kDepth);
    cudaError_t launched = cudaGetLastError();
    cudaError_t err = launched != cudaSuccess ? launched : cudaDeviceSynchronize();
    printf("recursion past the limit: %s\n", cudaGetErrorName(err));
    require(err != cudaSuccess, "recursion past the limit fails");
    return finish();
  }
  CHECK(cudaFree(out));
  return finish();
}
