// Cube map textures, which a portable runtime may not have: a cube map of six 4 x 4 float
// faces (cudaMalloc3DArray with cudaArrayCubemap, cudaMemcpy3D) read by texCubemap with point
// filtering at the centre of every texel of every face. A runtime without cube maps must
// refuse with cudaErrorNotSupported (at any step, the launch included) and keep working
// (expected output texture_cubemap.unsupported.txt); any other error fails.
#include <vector>

#include "common.h"

const int W = 4, N = 6 * W * W;

__global__ void read_cube(cudaTextureObject_t tex, const float3 *dirs, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = texCubemap<float>(tex, dirs[i].x, dirs[i].y, dirs[i].z);
}

// The direction whose major axis picks `face` and whose face coordinates are the centre of
// texel (x, y): the CUDA C++ Programming Guide's cube map table ("Cubemap Textures") read
// backwards, with m = 1 and |s|, |t| <= 3/4 (every value exact in float).
static float3 direction(int face, int x, int y) {
  float s = (x + 0.5f) / W * 2 - 1, t = (y + 0.5f) / W * 2 - 1;
  switch (face) {
    case 0: return make_float3(1, -t, -s);     // +x: s = -z, t = -y
    case 1: return make_float3(-1, -t, s);     // -x: s = z, t = -y
    case 2: return make_float3(s, 1, t);       // +y: s = x, t = z
    case 3: return make_float3(s, -1, -t);     // -y: s = x, t = -z
    case 4: return make_float3(s, -t, 1);      // +z: s = x, t = -y
    default: return make_float3(-s, -t, -1);   // -z: s = -x, t = -y
  }
}

#define TRY(call)                                           \
  do {                                                      \
    cudaError_t e_ = (call);                                \
    if (refused(e_, #call) || e_ != cudaSuccess) return e_; \
  } while (0)

static cudaError_t cube_texture(std::vector<float> &faces, const float3 *dirs, float *out) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  TRY(cudaMalloc3DArray(&array, &desc, make_cudaExtent(W, W, 6), cudaArrayCubemap));
  cudaMemcpy3DParms copy = {};
  copy.srcPtr = make_cudaPitchedPtr(faces.data(), W * sizeof(float), W, W);
  copy.dstArray = array;
  copy.extent = make_cudaExtent(W, W, 6);
  copy.kind = cudaMemcpyHostToDevice;
  TRY(cudaMemcpy3D(&copy));
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc tex_desc = {};
  for (int k = 0; k < 3; ++k) tex_desc.addressMode[k] = cudaAddressModeClamp;
  tex_desc.filterMode = cudaFilterModePoint;
  tex_desc.readMode = cudaReadModeElementType;
  tex_desc.normalizedCoords = 1;
  cudaTextureObject_t tex;
  TRY(cudaCreateTextureObject(&tex, &resource, &tex_desc, nullptr));
  read_cube<<<(N + 63) / 64, 64>>>(tex, dirs, out, N);
  TRY(cudaGetLastError());
  TRY(cudaDeviceSynchronize());
  TRY(cudaDestroyTextureObject(tex));
  return cudaFreeArray(array);
}

int main() {
  std::vector<float> faces(N), want(N);
  float3 *dirs;
  float *out;
  CHECK(cudaMallocManaged(&dirs, N * sizeof(float3)));
  CHECK(cudaMallocManaged(&out, N * sizeof(float)));
  for (int f = 0; f < 6; ++f)
    for (int y = 0; y < W; ++y)
      for (int x = 0; x < W; ++x) {
        int i = (f * W + y) * W + x;
        faces[i] = want[i] = (float)(100 * f + 10 * y + x);
        dirs[i] = direction(f, x, y);
      }
  cudaError_t e = cube_texture(faces, dirs, out);
  if (e == cudaErrorNotSupported) {
    cudaGetLastError();
    printf("cube map textures: cudaErrorNotSupported\n");
    int *d, got[4], ones[4] = {0x01010101, 0x01010101, 0x01010101, 0x01010101};
    CHECK(cudaMalloc(&d, sizeof got));
    CHECK(cudaMemset(d, 0x01, sizeof got));
    CHECK(cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost));
    expect_equal("memory after the refusal", got, ones, 4);
    return finish();
  }
  CHECK(e);
  expect_equal("cube map texture, point filtering at every texel centre", out, want.data(), N);
  return finish();
}
