// Texture objects, which a portable runtime may not have: a 2D CUDA array read through a
// texture with point filtering and clamped coordinates, and linear memory read with
// tex1Dfetch. A runtime without textures must refuse with cudaErrorNotSupported (at any step,
// the launch included) and keep working (expected output texture_object.unsupported.txt);
// any other error fails, and so does support for one kind of texture but not the other.
#include <algorithm>
#include <vector>

#include "common.h"

const int W = 64, H = 16;

// out[y][x] = texel (x - 2, y + 1): clamping repeats the edge texels.
__global__ void read_2d(cudaTextureObject_t tex, float *out) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * W + x] = tex2D<float>(tex, x - 2 + 0.5f, y + 1 + 0.5f);
}

__global__ void read_linear(cudaTextureObject_t tex, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int>(tex, n - 1 - i);
}

#define TRY(call)                                           \
  do {                                                      \
    cudaError_t e_ = (call);                                \
    if (refused(e_, #call) || e_ != cudaSuccess) return e_; \
  } while (0)

static cudaError_t array_texture(const std::vector<float> &image, float *out) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  TRY(cudaMallocArray(&array, &desc, W, H));
  TRY(cudaMemcpy2DToArray(array, 0, 0, image.data(), W * sizeof(float), W * sizeof(float), H,
                          cudaMemcpyHostToDevice));
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc tex_desc = {};
  tex_desc.addressMode[0] = cudaAddressModeClamp;
  tex_desc.addressMode[1] = cudaAddressModeClamp;
  tex_desc.filterMode = cudaFilterModePoint;
  tex_desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  TRY(cudaCreateTextureObject(&tex, &resource, &tex_desc, nullptr));
  read_2d<<<H, W>>>(tex, out);
  TRY(cudaGetLastError());
  TRY(cudaDeviceSynchronize());
  TRY(cudaDestroyTextureObject(tex));
  return cudaFreeArray(array);
}

static cudaError_t linear_texture(const int *d_in, int *out, int n) {
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = const_cast<int *>(d_in);
  resource.res.linear.desc = cudaCreateChannelDesc<int>();
  resource.res.linear.sizeInBytes = n * sizeof(int);
  cudaTextureDesc tex_desc = {};
  tex_desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  TRY(cudaCreateTextureObject(&tex, &resource, &tex_desc, nullptr));
  read_linear<<<(n + 127) / 128, 128>>>(tex, out, n);
  TRY(cudaGetLastError());
  TRY(cudaDeviceSynchronize());
  return cudaDestroyTextureObject(tex);
}

static int after_refusal() {
  cudaGetLastError();
  printf("texture objects: cudaErrorNotSupported\n");
  int *d;
  CHECK(cudaMalloc(&d, 4 * sizeof(int)));
  CHECK(cudaMemset(d, 0x01, 4 * sizeof(int)));
  int got[4], want[4] = {0x01010101, 0x01010101, 0x01010101, 0x01010101};
  CHECK(cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost));
  expect_equal("memory after the refusal", got, want, 4);
  return finish();
}

int main() {
  std::vector<float> image(W * H), want(W * H);
  for (int i = 0; i < W * H; ++i) image[i] = (float)(i * 3 % 1001);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      int sx = std::min(std::max(x - 2, 0), W - 1), sy = std::min(y + 1, H - 1);
      want[y * W + x] = image[sy * W + sx];
    }
  float *out;
  CHECK(cudaMallocManaged(&out, W * H * sizeof(float)));
  cudaError_t e = array_texture(image, out);
  if (e == cudaErrorNotSupported) return after_refusal();
  CHECK(e);
  expect_equal("2D array texture, point filtering, clamped", out, want.data(), W * H);

  const int n = 1000;
  std::vector<int> in(n), want_linear(n);
  for (int i = 0; i < n; ++i) in[i] = i * i, want_linear[i] = (n - 1 - i) * (n - 1 - i);
  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMallocManaged(&d_out, n * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  e = linear_texture(d_in, d_out, n);
  if (e == cudaErrorNotSupported) return after_refusal();
  CHECK(e);
  expect_equal("tex1Dfetch from linear memory", d_out, want_linear.data(), n);
  return finish();
}
