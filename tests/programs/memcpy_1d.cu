// Linear copies and sets: host to device, device to device (also inside one buffer), device to
// host, cudaMemcpyDefault with unified addressing, sub-ranges at odd offsets, zero-byte copies,
// and cudaMemset of single bytes.
#include <cstring>
#include <vector>

#include "common.h"

__global__ void scale(unsigned *x, unsigned factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

int main() {
  const int n = 100003;
  std::vector<unsigned> src(n), out(n), want(n);
  for (int i = 0; i < n; ++i) src[i] = i * 2654435761u;
  unsigned *a, *b;
  CHECK(cudaMalloc(&a, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&b, n * sizeof(unsigned)));

  CHECK(cudaMemcpy(a, src.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, a, n * sizeof(unsigned), cudaMemcpyDeviceToDevice));
  scale<<<(n + 255) / 256, 256>>>(b, 3, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), b, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) want[i] = src[i] * 3;
  expect_equal("H2D, D2D, kernel, D2H", out.data(), want.data(), n);

  CHECK(cudaMemcpy(out.data(), a, n * sizeof(unsigned), cudaMemcpyDefault));
  expect_equal("cudaMemcpyDefault D2H", out.data(), src.data(), n);
  CHECK(cudaMemcpy(b, src.data() + 7, 1000 * sizeof(unsigned), cudaMemcpyDefault));
  CHECK(cudaMemcpy(out.data(), b, 1000 * sizeof(unsigned), cudaMemcpyDefault));
  expect_equal("cudaMemcpyDefault H2D", out.data(), src.data() + 7, 1000);

  // Byte-granular copies at odd offsets inside one allocation (non-overlapping).
  unsigned char *bytes = reinterpret_cast<unsigned char *>(a);
  CHECK(cudaMemcpy(bytes + 5001, bytes + 3, 4097, cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> got(n * sizeof(unsigned)), ref(n * sizeof(unsigned));
  std::memcpy(ref.data(), src.data(), ref.size());
  std::memcpy(ref.data() + 5001, ref.data() + 3, 4097);
  CHECK(cudaMemcpy(got.data(), a, got.size(), cudaMemcpyDeviceToHost));
  expect_equal("odd-offset D2D inside one buffer", got.data(), ref.data(), got.size());

  CHECK(cudaMemset(bytes + 5, 0xAB, 12345));
  std::memset(ref.data() + 5, 0xAB, 12345);
  CHECK(cudaMemset(bytes + 20000, 0, 3));
  std::memset(ref.data() + 20000, 0, 3);
  CHECK(cudaMemcpy(got.data(), a, got.size(), cudaMemcpyDeviceToHost));
  expect_equal("cudaMemset at odd offsets", got.data(), ref.data(), got.size());

  CHECK(cudaMemcpy(a, src.data(), 0, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(a, 0, 0));
  printf("zero-byte copy and set: ok\n");

  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return finish();
}
