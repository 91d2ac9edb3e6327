// Mipmapped textures, which a portable runtime may not have: a 16 x 8 float mipmapped array
// of 3 levels (cudaMallocMipmappedArray, cudaGetMipmappedArrayLevel, cudaMemcpy2DToArray into
// each level) read by tex2DLod with point mipmap filtering at the centre of every texel of
// each level, and past the last level (which reads the last level). A runtime without
// mipmaps must refuse with cudaErrorNotSupported (at any step, the launch included) and keep
// working (expected output texture_mipmap.unsupported.txt); any other error fails.
#include <vector>

#include "common.h"

const int W = 16, H = 8, LEVELS = 3;

// Thread (x, y) of block `level` reads texel (x, y) of that level (if the level has it).
__global__ void read_levels(cudaTextureObject_t tex, float *out) {
  int level = blockIdx.x, x = threadIdx.x, y = threadIdx.y;
  int w = W >> level, h = H >> level;
  if (x < w && y < h)
    out[(level * H + y) * W + x] = tex2DLod<float>(tex, (x + 0.5f) / w, (y + 0.5f) / h,
                                                   (float)level);
}

__global__ void read_past_last(cudaTextureObject_t tex, float *out) {
  int x = threadIdx.x, y = threadIdx.y;
  const int w = W >> (LEVELS - 1), h = H >> (LEVELS - 1);
  out[y * w + x] = tex2DLod<float>(tex, (x + 0.5f) / w, (y + 0.5f) / h, 7.0f);
}

static float texel(int level, int x, int y) { return (float)(level * 1000 + y * 16 + x); }

#define TRY(call)                                           \
  do {                                                      \
    cudaError_t e_ = (call);                                \
    if (refused(e_, #call) || e_ != cudaSuccess) return e_; \
  } while (0)

static cudaError_t mipmapped(float *out, float *last) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mipmap;
  TRY(cudaMallocMipmappedArray(&mipmap, &desc, make_cudaExtent(W, H, 0), LEVELS));
  for (int level = 0; level < LEVELS; ++level) {
    cudaArray_t array;
    TRY(cudaGetMipmappedArrayLevel(&array, mipmap, level));
    int w = W >> level, h = H >> level;
    std::vector<float> image(w * h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) image[y * w + x] = texel(level, x, y);
    TRY(cudaMemcpy2DToArray(array, 0, 0, image.data(), w * sizeof(float), w * sizeof(float),
                            h, cudaMemcpyHostToDevice));
  }
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeMipmappedArray;
  resource.res.mipmap.mipmap = mipmap;
  cudaTextureDesc tex_desc = {};
  for (int k = 0; k < 3; ++k) tex_desc.addressMode[k] = cudaAddressModeClamp;
  tex_desc.filterMode = cudaFilterModePoint;
  tex_desc.mipmapFilterMode = cudaFilterModePoint;
  tex_desc.readMode = cudaReadModeElementType;
  tex_desc.normalizedCoords = 1;
  tex_desc.maxMipmapLevelClamp = LEVELS - 1;
  cudaTextureObject_t tex;
  TRY(cudaCreateTextureObject(&tex, &resource, &tex_desc, nullptr));
  read_levels<<<LEVELS, dim3(W, H)>>>(tex, out);
  TRY(cudaGetLastError());
  read_past_last<<<1, dim3(W >> (LEVELS - 1), H >> (LEVELS - 1))>>>(tex, last);
  TRY(cudaGetLastError());
  TRY(cudaDeviceSynchronize());
  TRY(cudaDestroyTextureObject(tex));
  return cudaFreeMipmappedArray(mipmap);
}

int main() {
  const int n = LEVELS * W * H, w = W >> (LEVELS - 1), h = H >> (LEVELS - 1);
  float *out, *last;
  CHECK(cudaMallocManaged(&out, n * sizeof(float)));
  CHECK(cudaMallocManaged(&last, w * h * sizeof(float)));
  for (int i = 0; i < n; ++i) out[i] = -1.0f;
  cudaError_t e = mipmapped(out, last);
  if (e == cudaErrorNotSupported) {
    cudaGetLastError();
    printf("mipmapped arrays: cudaErrorNotSupported\n");
    CHECK(cudaMemset(out, 0, n * sizeof(float)));
    CHECK(cudaDeviceSynchronize());
    std::vector<float> zero(n, 0.0f);
    expect_equal("memory after the refusal", out, zero.data(), n);
    return finish();
  }
  CHECK(e);
  std::vector<float> want(n, -1.0f), want_last(w * h);
  for (int level = 0; level < LEVELS; ++level)
    for (int y = 0; y < (H >> level); ++y)
      for (int x = 0; x < (W >> level); ++x) want[(level * H + y) * W + x] = texel(level, x, y);
  expect_equal("tex2DLod at each level", out, want.data(), n);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) want_last[y * w + x] = texel(LEVELS - 1, x, y);
  expect_equal("tex2DLod past the last level", last, want_last.data(), w * h);
  return finish();
}
