// Several host threads using the device at once, as servers and pipelines do: each of eight
// threads creates its own stream and events, allocates, copies in, launches, copies out and
// frees, many times over; then one thread's stream waits on an event recorded by another's,
// handed over through the host. The runtime must keep every thread's work apart and intact.
#include <atomic>
#include <thread>
#include <vector>

#include "common.h"

__global__ void affine(int *x, int n, int a, int b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + b;
}

static std::atomic<int> g_bad_rounds{0};

static void worker(int t) {
  const int n = 5000 + 17 * t, rounds = 20;
  cudaStream_t s;
  cudaEvent_t done;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&done));
  std::vector<int> host(n), back(n);
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) host[i] = i + t * 1000 + r;
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemcpyAsync(d, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
    affine<<<(n + 255) / 256, 256, 0, s>>>(d, n, t + 2, r);
    CHECK(cudaMemcpyAsync(back.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaEventRecord(done, s));
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaFree(d));
    for (int i = 0; i < n; ++i)
      if (back[i] != host[i] * (t + 2) + r) {
        ++g_bad_rounds;
        break;
      }
  }
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s));
}

// Thread A fills a buffer slowly and records an event; thread B's stream waits for it and
// doubles the buffer; the host then checks both steps happened in that order.
static void handover() {
  const int n = 1 << 16;
  int *d;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  std::atomic<bool> recorded{false};
  std::thread a([&] {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int k = 0; k < 50; ++k) affine<<<n / 256, 256, 0, s>>>(d, n, 1, 1);
    CHECK(cudaEventRecord(filled, s));
    recorded = true;
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
  });
  std::thread b([&] {
    while (!recorded) std::this_thread::yield();
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamWaitEvent(s, filled, 0));
    affine<<<n / 256, 256, 0, s>>>(d, n, 2, 0);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
  });
  a.join();
  b.join();
  std::vector<int> got(n), want(n, 100);
  CHECK(cudaMemcpy(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  expect_equal("event handed from one host thread to another", got.data(), want.data(), n);
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaFree(d));
}

int main() {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back(worker, t);
  for (auto &t : threads) t.join();
  printf("8 host threads x 20 rounds, rounds with wrong data: %d\n", g_bad_rounds.load());
  require(g_bad_rounds == 0, "every round right");
  handover();
  return finish();
}
