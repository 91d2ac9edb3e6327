// Streams and events across streams: a producer on one stream and a consumer on another
// ordered by cudaStreamWaitEvent, host functions (cudaLaunchHostFunc) ordered with kernels,
// cudaStreamQuery and cudaEventQuery once work is done, event timing (only that it is
// positive), events without timing (an error to time), and blocking-sync events.
#include <atomic>
#include <vector>

#include "common.h"

// Long enough that an unordered consumer would see the old values.
__global__ void produce(int *x, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 1103515245 + 12345;
  x[i] = v;
}

__global__ void consume(const int *x, int *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] ^ 0x5A5A5A5A;
}

struct HostLog {
  std::atomic<int> step{0};
  int seen[4] = {-1, -1, -1, -1};
};

static void CUDART_CB record_step(void *arg) {
  HostLog *log = static_cast<HostLog *>(arg);
  int s = log->step.fetch_add(1);
  if (s < 4) log->seen[s] = s;
}

static void CUDART_CB check_copy_done(void *arg) {
  const int *host = static_cast<const int *>(arg);
  // Runs after the copy before it in the stream: the copied value is visible here.
  printf("host function sees copied value: %d\n", host[0]);
}

int main() {
  const int n = 1 << 16, rounds = 2000;
  int *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(int)));
  CHECK(cudaMalloc(&y, n * sizeof(int)));
  std::vector<int> init(n), got(n), want(n);
  for (int i = 0; i < n; ++i) init[i] = i;
  CHECK(cudaMemcpy(x, init.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  cudaStream_t producer, consumer;
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  cudaEvent_t produced, start, stop;
  CHECK(cudaEventCreate(&produced));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));

  CHECK(cudaEventRecord(start, producer));
  produce<<<n / 256, 256, 0, producer>>>(x, n, rounds);
  CHECK(cudaEventRecord(produced, producer));
  CHECK(cudaStreamWaitEvent(consumer, produced, 0));
  consume<<<n / 256, 256, 0, consumer>>>(x, y, n);
  CHECK(cudaEventRecord(stop, consumer));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaMemcpy(got.data(), y, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int v = i;
    for (int r = 0; r < rounds; ++r) v = v * 1103515245 + 12345;
    want[i] = v ^ 0x5A5A5A5A;
  }
  expect_equal("consumer waits for producer's event", got.data(), want.data(), n);

  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  printf("elapsed time across streams > 0: %s\n", ms > 0 ? "yes" : "no");
  require(ms > 0, "elapsed time > 0");
  expect_error("cudaEventQuery(stop) after sync", cudaEventQuery(stop), cudaSuccess);
  CHECK(cudaStreamSynchronize(consumer));
  expect_error("cudaStreamQuery(consumer) after sync", cudaStreamQuery(consumer), cudaSuccess);

  HostLog log;
  int *pinned;
  CHECK(cudaMallocHost(&pinned, sizeof(int)));
  *pinned = 0;
  CHECK(cudaLaunchHostFunc(producer, record_step, &log));
  produce<<<n / 256, 256, 0, producer>>>(x, n, 10);
  CHECK(cudaLaunchHostFunc(producer, record_step, &log));
  CHECK(cudaMemcpyAsync(pinned, y + 5, sizeof(int), cudaMemcpyDeviceToHost, producer));
  CHECK(cudaLaunchHostFunc(producer, check_copy_done, pinned));
  CHECK(cudaLaunchHostFunc(producer, record_step, &log));
  CHECK(cudaStreamSynchronize(producer));
  printf("host functions ran in order: %d %d %d\n", log.seen[0], log.seen[1], log.seen[2]);
  require(log.step.load() == 3, "three host functions ran");

  cudaEvent_t untimed;
  CHECK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  CHECK(cudaEventRecord(untimed, consumer));
  CHECK(cudaEventSynchronize(untimed));
  expect_error("elapsed time of an event without timing",
               cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  cudaGetLastError();

  for (cudaEvent_t e : {produced, start, stop, untimed}) CHECK(cudaEventDestroy(e));
  CHECK(cudaStreamDestroy(producer));
  CHECK(cudaStreamDestroy(consumer));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return finish();
}
