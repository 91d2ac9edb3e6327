// Every device of the machine with cudaSetDevice: a vector computation split over all
// devices, gathered on device 0 by peer copies (cudaMemcpyPeer after launches on the other
// devices' default streams, which it must wait for; cudaMemcpyPeerAsync after events of the
// other devices' streams), scattered back with cudaMemcpyDefault, reduced on each device;
// pointer attributes name each allocation's device; peer access is enabled where
// cudaDeviceCanAccessPeer allows it and a kernel then reads a peer's memory. The output is
// the same for any number of devices (the count goes to stderr).
#include <vector>

#include "common.h"

__global__ void combine(const int *a, const int *b, int *c, int n, int first) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = 3 * a[i] + b[i] - (first + i);
}

__global__ void twice_minus_index(int *c, int n, int first) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = 2 * c[i] - (first + i);
}

__global__ void sum(const int *c, int n, unsigned long long *total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, (unsigned long long)(long long)c[i]);
}

__global__ void copy_from_peer(const int *peer, int *own, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) own[i] = peer[i] + 1;
}

static int blocks(int n) { return (n + 255) / 256; }

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  fprintf(stderr, "%d device(s)\n", count);
  require(count >= 1, "at least one device");

  const int n = (1 << 18) + 333;
  std::vector<int> a(n), b(n), want(n), out(n);
  for (int i = 0; i < n; ++i) {
    a[i] = (i * 7919) % 10007 - 5000;
    b[i] = (i * 104729) % 65537 - 30000;
    want[i] = 3 * a[i] + b[i] - i;
  }
  std::vector<int> first(count + 1);
  for (int d = 0; d <= count; ++d) first[d] = (int)((long long)n * d / count);

  // Each device computes its part on its legacy default stream; nothing waits for it.
  std::vector<int *> da(count), db(count), dc(count);
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    int current = -1;
    CHECK(cudaGetDevice(&current));
    require(current == d, "cudaGetDevice gives the device cudaSetDevice chose");
    int len = first[d + 1] - first[d];
    CHECK(cudaMalloc(&da[d], len * sizeof(int)));
    CHECK(cudaMalloc(&db[d], len * sizeof(int)));
    CHECK(cudaMalloc(&dc[d], len * sizeof(int)));
    CHECK(cudaMemcpyAsync(da[d], a.data() + first[d], len * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyAsync(db[d], b.data() + first[d], len * sizeof(int), cudaMemcpyHostToDevice));
    combine<<<blocks(len), 256>>>(da[d], db[d], dc[d], len, first[d]);
    CHECK(cudaGetLastError());
  }

  // cudaMemcpyPeer waits for the work of the source device.
  CHECK(cudaSetDevice(0));
  int *all;
  CHECK(cudaMalloc(&all, n * sizeof(int)));
  for (int d = 0; d < count; ++d)
    CHECK(cudaMemcpyPeer(all + first[d], 0, dc[d], d, (first[d + 1] - first[d]) * sizeof(int)));
  CHECK(cudaMemcpy(out.data(), all, n * sizeof(int), cudaMemcpyDeviceToHost));
  expect_equal("split over every device, gathered by cudaMemcpyPeer", out.data(), want.data(),
               n);

  bool attributes_ok = true;
  for (int d = 0; d < count; ++d) {
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, dc[d] + 1));
    attributes_ok = attributes_ok && attr.type == cudaMemoryTypeDevice && attr.device == d;
  }
  require(attributes_ok, "cudaPointerGetAttributes names each allocation's device");
  printf("pointer attributes: %s\n", attributes_ok ? "ok" : "wrong");

  // A second step on each device's own stream; device 0's stream waits for their events.
  std::vector<cudaStream_t> streams(count);
  std::vector<cudaEvent_t> done(count);
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamCreate(&streams[d]));
    CHECK(cudaEventCreateWithFlags(&done[d], cudaEventDisableTiming));
    int len = first[d + 1] - first[d];
    twice_minus_index<<<blocks(len), 256, 0, streams[d]>>>(dc[d], len, first[d]);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(done[d], streams[d]));
  }
  CHECK(cudaSetDevice(0));
  cudaStream_t gather;
  CHECK(cudaStreamCreateWithFlags(&gather, cudaStreamNonBlocking));
  for (int d = 0; d < count; ++d) {
    CHECK(cudaStreamWaitEvent(gather, done[d], 0));
    CHECK(cudaMemcpyPeerAsync(all + first[d], 0, dc[d], d,
                              (first[d + 1] - first[d]) * sizeof(int), gather));
  }
  CHECK(cudaMemcpyAsync(out.data(), all, n * sizeof(int), cudaMemcpyDeviceToHost, gather));
  CHECK(cudaStreamSynchronize(gather));
  std::vector<int> want2(n);
  for (int i = 0; i < n; ++i) want2[i] = 2 * want[i] - i;
  expect_equal("second step, gathered by events and cudaMemcpyPeerAsync", out.data(),
               want2.data(), n);

  // Scatter the first result back from device 0 with cudaMemcpyDefault (unified addressing
  // finds both devices), then each device sums its part.
  CHECK(cudaMemcpy(all, want.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  std::vector<unsigned long long *> totals(count);
  for (int d = 0; d < count; ++d) {
    int len = first[d + 1] - first[d];
    CHECK(cudaMemcpy(dc[d], all + first[d], len * sizeof(int), cudaMemcpyDefault));
    CHECK(cudaSetDevice(d));
    CHECK(cudaMalloc(&totals[d], sizeof(unsigned long long)));
    CHECK(cudaMemset(totals[d], 0, sizeof(unsigned long long)));
    sum<<<blocks(len), 256>>>(dc[d], len, totals[d]);
    CHECK(cudaGetLastError());
  }
  long long total = 0, want_total = 0;
  for (int i = 0; i < n; ++i) want_total += want[i];
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    unsigned long long part = 0;
    CHECK(cudaMemcpy(&part, totals[d], sizeof part, cudaMemcpyDeviceToHost));
    total += (long long)part;
  }
  require(total == want_total, "the sums of the parts add up to the sum of the whole");
  printf("scatter by cudaMemcpyDefault, sum per device: %s\n",
         total == want_total ? "ok" : "wrong");

  // Peer access where the devices allow it; a refusal where they do not.
  int pairs = 0, peer_failures = 0;
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    for (int p = 0; p < count; ++p) {
      if (p == d) continue;
      int can = -1;
      CHECK(cudaDeviceCanAccessPeer(&can, d, p));
      cudaError_t enabled = cudaDeviceEnablePeerAccess(p, 0);
      if (!can) {
        if (enabled != cudaErrorInvalidDevice && enabled != cudaErrorPeerAccessUnsupported) {
          printf("FAIL: enabling access %d -> %d, which cannot be: %s\n", d, p,
                 cudaGetErrorName(enabled));
          ++peer_failures;
        }
        cudaGetLastError();
        continue;
      }
      ++pairs;
      if (enabled != cudaSuccess ||
          cudaDeviceEnablePeerAccess(p, 0) != cudaErrorPeerAccessAlreadyEnabled) {
        printf("FAIL: enabling access %d -> %d\n", d, p);
        ++peer_failures;
      }
      cudaGetLastError();
      int len = first[p + 1] - first[p];
      int *own;
      CHECK(cudaMalloc(&own, len * sizeof(int)));
      copy_from_peer<<<blocks(len), 256>>>(dc[p], own, len);
      CHECK(cudaGetLastError());
      std::vector<int> got(len);
      CHECK(cudaMemcpy(got.data(), own, len * sizeof(int), cudaMemcpyDeviceToHost));
      for (int i = 0; i < len; ++i)
        if (got[i] != want[first[p] + i] + 1) {
          printf("FAIL: a kernel on device %d read device %d's [%d] as %d\n", d, p, i, got[i]);
          ++peer_failures;
          break;
        }
      CHECK(cudaFree(own));
      CHECK(cudaDeviceDisablePeerAccess(p));
      if (cudaDeviceDisablePeerAccess(p) != cudaErrorPeerAccessNotEnabled) {
        printf("FAIL: disabling access %d -> %d twice\n", d, p);
        ++peer_failures;
      }
      cudaGetLastError();
    }
  }
  fprintf(stderr, "%d pair(s) with peer access\n", pairs);
  g_failures += peer_failures;
  printf("peer access: %s\n", peer_failures ? "wrong" : "consistent");

  expect_error("set device past the last", cudaSetDevice(count), cudaErrorInvalidDevice);
  cudaGetLastError();

  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaStreamDestroy(streams[d]));
    CHECK(cudaEventDestroy(done[d]));
    CHECK(cudaFree(da[d]));
    CHECK(cudaFree(db[d]));
    CHECK(cudaFree(dc[d]));
    CHECK(cudaFree(totals[d]));
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamDestroy(gather));
  CHECK(cudaFree(all));
  return finish();
}
