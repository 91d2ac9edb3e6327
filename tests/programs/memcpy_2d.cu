// Pitched 2D memory: cudaMallocPitch, cudaMemcpy2D in every direction with sub-rectangles,
// cudaMemset2D, a kernel that walks rows by the pitch, and a 2D copy whose width exceeds
// its pitch (an error).
#include <cstring>
#include <vector>

#include "common.h"

const int W = 300, H = 77;  // elements per row, rows

__global__ void add_coordinates(float *m, size_t pitch, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    float *row = reinterpret_cast<float *>(reinterpret_cast<char *>(m) + y * pitch);
    row[x] += (float)(x + 1000 * y);
  }
}

int main() {
  std::vector<float> host(W * H), out(W * H), want(W * H);
  for (int i = 0; i < W * H; ++i) host[i] = (float)(i % 251);
  float *d, *e;
  size_t pitch = 0, pitch_e = 0;
  CHECK(cudaMallocPitch(&d, &pitch, W * sizeof(float), H));
  CHECK(cudaMallocPitch(&e, &pitch_e, W * sizeof(float), H));
  require(pitch >= W * sizeof(float), "pitch >= row width");
  printf("pitch >= width: ok\n");

  CHECK(cudaMemcpy2D(d, pitch, host.data(), W * sizeof(float), W * sizeof(float), H,
                     cudaMemcpyHostToDevice));
  dim3 block(32, 8), grid((W + 31) / 32, (H + 7) / 8);
  add_coordinates<<<grid, block>>>(d, pitch, W, H);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy2D(e, pitch_e, d, pitch, W * sizeof(float), H, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy2D(out.data(), W * sizeof(float), e, pitch_e, W * sizeof(float), H,
                     cudaMemcpyDeviceToHost));
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) want[y * W + x] = host[y * W + x] + (float)(x + 1000 * y);
  expect_equal("2D H2D, kernel, D2D, D2H", out.data(), want.data(), W * H);

  // A 40x20 window at (x=13, y=9) of the device matrix into a dense host block.
  const int ww = 40, wh = 20, x0 = 13, y0 = 9;
  std::vector<float> window(ww * wh), window_want(ww * wh);
  const char *origin = reinterpret_cast<const char *>(e) + y0 * pitch_e + x0 * sizeof(float);
  CHECK(cudaMemcpy2D(window.data(), ww * sizeof(float), origin, pitch_e, ww * sizeof(float), wh,
                     cudaMemcpyDeviceToHost));
  for (int y = 0; y < wh; ++y)
    for (int x = 0; x < ww; ++x) window_want[y * ww + x] = want[(y + y0) * W + x + x0];
  expect_equal("2D sub-rectangle D2H", window.data(), window_want.data(), ww * wh);

  // cudaMemset2D over a 17-byte-wide, 5-row band starting at byte 3 of row 2.
  char *band = reinterpret_cast<char *>(e) + 2 * pitch_e + 3;
  CHECK(cudaMemset2D(band, pitch_e, 0x7F, 17, 5));
  std::vector<unsigned char> bytes(W * H * sizeof(float));
  CHECK(cudaMemcpy2D(bytes.data(), W * sizeof(float), e, pitch_e, W * sizeof(float), H,
                     cudaMemcpyDeviceToHost));
  std::vector<unsigned char> bytes_want(bytes.size());
  memcpy(bytes_want.data(), want.data(), bytes_want.size());
  for (int y = 2; y < 7; ++y)
    for (int x = 3; x < 20; ++x) bytes_want[y * W * sizeof(float) + x] = 0x7F;
  expect_equal("cudaMemset2D band", bytes.data(), bytes_want.data(), bytes.size());

  expect_error("cudaMemcpy2D width > pitch",
               cudaMemcpy2D(e, 8, host.data(), 8, 16, 2, cudaMemcpyHostToDevice),
               cudaErrorInvalidPitchValue);
  cudaGetLastError();
  CHECK(cudaFree(d));
  CHECK(cudaFree(e));
  return finish();
}
