// The default stream: built as is, stream 0 is the legacy default stream, which waits for
// and is waited on by every blocking stream; built with --default-stream per-thread, each
// host thread has its own. The same checks hold in both builds because they order work
// explicitly where the two differ (cudaStreamLegacy by name, events for per-thread streams);
// cudaStreamAddCallback is the older form of cudaLaunchHostFunc.
#include <thread>
#include <vector>

#include "common.h"

__global__ void slow_fill(int *x, int n, int value, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = value;
  for (int r = 0; r < rounds; ++r) v = (v * 7 + r) % 1000003;
  x[i] = v;
}

__global__ void copy_plus(const int *x, int *y, int n, int add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + add;
}

static int slow_value(int value, int rounds) {
  int v = value;
  for (int r = 0; r < rounds; ++r) v = (v * 7 + r) % 1000003;
  return v;
}

static void CUDART_CB note_status(cudaStream_t, cudaError_t status, void *arg) {
  *static_cast<cudaError_t *>(arg) = status;
}

// A blocking stream's work is ordered before later work on the legacy default stream.
static void legacy_stream_orders_blocking_streams() {
  const int n = 1 << 15;
  int *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(int)));
  CHECK(cudaMalloc(&y, n * sizeof(int)));
  cudaStream_t blocking;
  CHECK(cudaStreamCreate(&blocking));
  slow_fill<<<n / 256, 256, 0, blocking>>>(x, n, 3, 3000);
  copy_plus<<<n / 256, 256, 0, cudaStreamLegacy>>>(x, y, n, 1);
  std::vector<int> got(n), want(n, slow_value(3, 3000) + 1);
  CHECK(cudaMemcpyAsync(got.data(), y, n * sizeof(int), cudaMemcpyDeviceToHost,
                        cudaStreamLegacy));
  CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  expect_equal("legacy default stream waits for a blocking stream", got.data(), want.data(), n);
  cudaError_t seen = cudaErrorUnknown;
  CHECK(cudaStreamAddCallback(blocking, note_status, &seen, 0));
  CHECK(cudaStreamSynchronize(blocking));
  expect_error("cudaStreamAddCallback status", seen, cudaSuccess);
  CHECK(cudaStreamDestroy(blocking));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

// Each host thread fills its own slice on the per-thread default stream.
static void per_thread_streams() {
  const int threads = 4, per = 4096;
  int *x;
  CHECK(cudaMalloc(&x, threads * per * sizeof(int)));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      slow_fill<<<per / 256, 256, 0, cudaStreamPerThread>>>(x + t * per, per, t, 500);
      CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    });
  }
  for (auto &w : workers) w.join();
  std::vector<int> got(threads * per), want(threads * per);
  CHECK(cudaMemcpy(got.data(), x, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < threads * per; ++i) want[i] = slow_value(i / per, 500);
  expect_equal("cudaStreamPerThread from four host threads", got.data(), want.data(),
               got.size());
  CHECK(cudaFree(x));
}

int main() {
  legacy_stream_orders_blocking_streams();
  per_thread_streams();
  return finish();
}
