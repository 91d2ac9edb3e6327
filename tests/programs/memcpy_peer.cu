// Peer copies with one device: cudaMemcpyPeer and cudaMemcpyPeerAsync from device 0 to device
// 0, cudaMemcpy3DPeer, and cudaMemcpyDefault between two allocations (unified addressing lets
// the runtime find both devices).
#include <vector>

#include "common.h"

int main() {
  const int n = 4099;
  std::vector<long long> host(n), out(n);
  for (int i = 0; i < n; ++i) host[i] = (long long)i * i * 977 - 5;
  long long *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(long long)));
  CHECK(cudaMalloc(&b, n * sizeof(long long)));
  CHECK(cudaMalloc(&c, n * sizeof(long long)));
  CHECK(cudaMemcpy(a, host.data(), n * sizeof(long long), cudaMemcpyHostToDevice));

  CHECK(cudaMemcpyPeer(b, 0, a, 0, n * sizeof(long long)));
  CHECK(cudaMemcpy(out.data(), b, n * sizeof(long long), cudaMemcpyDeviceToHost));
  expect_equal("cudaMemcpyPeer 0 -> 0", out.data(), host.data(), n);

  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMemsetAsync(c, 0, n * sizeof(long long), s));
  CHECK(cudaMemcpyPeerAsync(c + 1, 0, b, 0, (n - 1) * sizeof(long long), s));
  CHECK(cudaMemcpyAsync(out.data(), c, n * sizeof(long long), cudaMemcpyDefault, s));
  CHECK(cudaStreamSynchronize(s));
  std::vector<long long> shifted(n, 0);
  for (int i = 1; i < n; ++i) shifted[i] = host[i - 1];
  expect_equal("cudaMemcpyPeerAsync 0 -> 0, shifted", out.data(), shifted.data(), n);

  CHECK(cudaMemcpy(a, c, n * sizeof(long long), cudaMemcpyDefault));
  CHECK(cudaMemcpy(out.data(), a, n * sizeof(long long), cudaMemcpyDefault));
  expect_equal("cudaMemcpyDefault D2D", out.data(), shifted.data(), n);

  cudaMemcpy3DPeerParms p = {};
  p.srcPtr = make_cudaPitchedPtr(b, 64 * sizeof(long long), 64 * sizeof(long long), 8);
  p.srcDevice = 0;
  p.dstPtr = make_cudaPitchedPtr(c, 64 * sizeof(long long), 64 * sizeof(long long), 8);
  p.dstDevice = 0;
  p.extent = make_cudaExtent(64 * sizeof(long long), 8, 2);
  CHECK(cudaMemcpy3DPeer(&p));
  CHECK(cudaMemcpy(out.data(), c, n * sizeof(long long), cudaMemcpyDeviceToHost));
  std::vector<long long> want = shifted;
  for (int i = 0; i < 64 * 8 * 2; ++i) want[i] = host[i];
  expect_equal("cudaMemcpy3DPeer 0 -> 0", out.data(), want.data(), n);

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return finish();
}
