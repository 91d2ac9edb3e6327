// CUDA arrays through the runtime API, and the texture and surface objects over them:
// cudaMallocArray, cudaMalloc3DArray (3D and layered), cudaArrayGetInfo, cudaGetChannelDesc,
// the 2D copies to, from and between arrays at offsets (cudaMemcpy2DToArray,
// cudaMemcpy2DFromArray, cudaMemcpy2DArrayToArray, their Async forms), the deprecated 1D ones
// (cudaMemcpyToArray, cudaMemcpyFromArray), cudaMemcpy3D to and from arrays with positions,
// tex2D (point, wrap with normalized coordinates, linear at texel centres and midpoints),
// tex3D, tex2DLayered, surf2Dwrite/surf2Dread, cudaGetTextureObjectResourceDesc and
// cudaGetTextureObjectTextureDesc, and cudaFreeArray. Every result is exact, so
// the host computes each one. No refusal is accepted: the program needs all of it.
#include <vector>

#include "common.h"

const int W = 37, H = 13;            // odd sizes: no row is a power of two
const int DX = 8, DY = 6, DZ = 4;    // the 3D array
const int LW = 16, LH = 4, LN = 3;   // the layered array: 3 layers of 16 x 4

static float texel(int x, int y) { return (float)((x * 7 + y * 131) % 1009); }

__global__ void read_points(cudaTextureObject_t tex, float *out) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * W + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

// Wrap mode with normalized coordinates: texel (x + 3, y - 2), wrapped around.
__global__ void read_wrapped(cudaTextureObject_t tex, float *out) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * W + x] = tex2D<float>(tex, (x + 3 + 0.5f) / W, (y - 2 + 0.5f) / H);
}

// Linear filtering at the midpoint between texels x and x + 1 of row y (clamped at the end).
__global__ void read_midpoints(cudaTextureObject_t tex, float *out) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * W + x] = tex2D<float>(tex, x + 1.0f, y + 0.5f);
}

__global__ void read_3d(cudaTextureObject_t tex, int *out) {
  int x = threadIdx.x, y = threadIdx.y, z = blockIdx.x;
  out[(z * DY + y) * DX + x] = tex3D<int>(tex, x + 0.5f, y + 0.5f, z + 0.5f);
}

__global__ void read_layers(cudaTextureObject_t tex, float *out) {
  int x = threadIdx.x, y = threadIdx.y, layer = blockIdx.x;
  out[(layer * LH + y) * LW + x] = tex2DLayered<float>(tex, x + 0.5f, y + 0.5f, layer);
}

__global__ void write_surface(cudaSurfaceObject_t surf) {
  int x = threadIdx.x, y = blockIdx.x;
  surf2Dwrite(make_short2(x * 3 - y, y * 100 + x), surf, x * sizeof(short2), y);
}

__global__ void read_surface(cudaSurfaceObject_t surf, short2 *out) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * W + x] = surf2Dread<short2>(surf, x * sizeof(short2), y);
}

static cudaTextureObject_t texture(cudaArray_t array, cudaTextureAddressMode mode,
                                   cudaTextureFilterMode filter, int normalized) {
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc desc = {};
  for (int k = 0; k < 3; ++k) desc.addressMode[k] = mode;
  desc.filterMode = filter;
  desc.readMode = cudaReadModeElementType;
  desc.normalizedCoords = normalized;
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &resource, &desc, nullptr));
  return tex;
}

static void check_info(cudaArray_t array) {
  cudaChannelFormatDesc desc;
  cudaExtent extent;
  unsigned int flags;
  CHECK(cudaArrayGetInfo(&desc, &extent, &flags, array));
  require(desc.x == 32 && desc.y == 0 && desc.z == 0 && desc.w == 0 &&
              desc.f == cudaChannelFormatKindFloat, "cudaArrayGetInfo: the channel format");
  require(extent.width == W && extent.height == H && extent.depth == 0,
          "cudaArrayGetInfo: the extent");
  require(flags == cudaArrayDefault, "cudaArrayGetInfo: the flags");
  cudaChannelFormatDesc again;
  CHECK(cudaGetChannelDesc(&again, array));
  require(again.x == 32 && again.f == cudaChannelFormatKindFloat, "cudaGetChannelDesc");
  printf("array info: ok\n");
}

// Copies in and out of a 2D float array, at offsets and with padded pitches.
static void copies_2d(cudaArray_t array, std::vector<float> &model) {
  const int pitch = W + 5;                      // the host rows are padded
  std::vector<float> padded(pitch * H, -1.0f);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) padded[y * pitch + x] = model[y * W + x] = texel(x, y);
  CHECK(cudaMemcpy2DToArray(array, 0, 0, padded.data(), pitch * sizeof(float),
                            W * sizeof(float), H, cudaMemcpyHostToDevice));
  // A 5 x 4 block at texel (3, 2) from a device buffer, asynchronously.
  std::vector<float> block(5 * 4);
  for (int i = 0; i < 20; ++i) block[i] = 5000.0f + i;
  float *d_block;
  CHECK(cudaMalloc(&d_block, block.size() * sizeof(float)));
  CHECK(cudaMemcpy(d_block, block.data(), block.size() * sizeof(float),
                   cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemcpy2DToArrayAsync(array, 3 * sizeof(float), 2, d_block, 5 * sizeof(float),
                                 5 * sizeof(float), 4, cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d_block));
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x) model[(y + 2) * W + x + 3] = block[y * 5 + x];
  std::vector<float> back(pitch * H, -2.0f), want(pitch * H, -2.0f);
  CHECK(cudaMemcpy2DFromArray(back.data(), pitch * sizeof(float), array, 0, 0,
                              W * sizeof(float), H, cudaMemcpyDeviceToHost));
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) want[y * pitch + x] = model[y * W + x];
  expect_equal("cudaMemcpy2DToArray, cudaMemcpy2DFromArray", back.data(), want.data(),
               back.size());
  // A 2 x 3 block read from texel (30, 10).
  float small[6], small_want[6];
  CHECK(cudaMemcpy2DFromArray(small, 2 * sizeof(float), array, 30 * sizeof(float), 10,
                              2 * sizeof(float), 3, cudaMemcpyDeviceToHost));
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 2; ++x) small_want[y * 2 + x] = model[(y + 10) * W + x + 30];
  expect_equal("cudaMemcpy2DFromArray at an offset", small, small_want, 6);
  expect_error("cudaMemcpy2DToArray past the last row",
               cudaMemcpy2DToArray(array, 0, H - 1, padded.data(), pitch * sizeof(float),
                                   W * sizeof(float), 2, cudaMemcpyHostToDevice),
               cudaErrorInvalidValue);
}

// The deprecated 1D copies and an array-to-array copy, on a second array.
static void copies_1d(cudaArray_t array, const std::vector<float> &model) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t other;
  CHECK(cudaMallocArray(&other, &desc, W, H));
  CHECK(cudaMemcpy2DArrayToArray(other, 0, 0, array, 0, 0, W * sizeof(float), H,
                                 cudaMemcpyDeviceToDevice));
  std::vector<float> back(W * H);
  CHECK(cudaMemcpyFromArray(back.data(), other, 0, 0, W * H * sizeof(float),
                            cudaMemcpyDeviceToHost));
  expect_equal("cudaMemcpy2DArrayToArray, cudaMemcpyFromArray", back.data(), model.data(),
               back.size());
  std::vector<float> row(W);
  for (int x = 0; x < W; ++x) row[x] = -1.0f - x;
  CHECK(cudaMemcpyToArray(other, 0, 4, row.data(), W * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyFromArray(back.data(), other, 0, 0, W * H * sizeof(float),
                            cudaMemcpyDeviceToHost));
  std::vector<float> want(model);
  for (int x = 0; x < W; ++x) want[4 * W + x] = row[x];
  expect_equal("cudaMemcpyToArray (one row)", back.data(), want.data(), back.size());
  CHECK(cudaFreeArray(other));
}

// What cudaGetTextureObjectResourceDesc and cudaGetTextureObjectTextureDesc give back.
static void check_descriptions(cudaTextureObject_t tex, cudaArray_t array) {
  cudaResourceDesc resource;
  CHECK(cudaGetTextureObjectResourceDesc(&resource, tex));
  cudaTextureDesc desc;
  CHECK(cudaGetTextureObjectTextureDesc(&desc, tex));
  bool ok = resource.resType == cudaResourceTypeArray && resource.res.array.array == array &&
            desc.addressMode[0] == cudaAddressModeWrap &&
            desc.addressMode[1] == cudaAddressModeWrap &&
            desc.filterMode == cudaFilterModePoint && desc.normalizedCoords == 1;
  printf("texture object descriptions: %s\n", ok ? "ok" : "FAIL");
  if (!ok) ++g_failures;
}

static void textures_2d(cudaArray_t array, const std::vector<float> &model, float *out) {
  cudaTextureObject_t tex = texture(array, cudaAddressModeClamp, cudaFilterModePoint, 0);
  read_points<<<H, W>>>(tex, out);
  CHECK(cudaDeviceSynchronize());
  expect_equal("tex2D, point", out, model.data(), W * H);
  CHECK(cudaDestroyTextureObject(tex));

  std::vector<float> want(W * H);
  tex = texture(array, cudaAddressModeWrap, cudaFilterModePoint, 1);
  check_descriptions(tex, array);
  read_wrapped<<<H, W>>>(tex, out);
  CHECK(cudaDeviceSynchronize());
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) want[y * W + x] = model[((y - 2 + H) % H) * W + (x + 3) % W];
  expect_equal("tex2D, wrap, normalized coordinates", out, want.data(), W * H);
  CHECK(cudaDestroyTextureObject(tex));

  tex = texture(array, cudaAddressModeClamp, cudaFilterModeLinear, 0);
  read_midpoints<<<H, W>>>(tex, out);
  CHECK(cudaDeviceSynchronize());
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      float a = model[y * W + x], b = model[y * W + (x + 1 < W ? x + 1 : x)];
      want[y * W + x] = (a + b) * 0.5f;         // integers below 2^13: exact
    }
  expect_equal("tex2D, linear, midpoints", out, want.data(), W * H);
  CHECK(cudaDestroyTextureObject(tex));
}

static void texture_3d() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<int>();
  cudaArray_t array;
  CHECK(cudaMalloc3DArray(&array, &desc, make_cudaExtent(DX, DY, DZ)));
  const int n = DX * DY * DZ;
  std::vector<int> host(n), model(n, 0), back(n);
  for (int i = 0; i < n; ++i) host[i] = i * 37 - 500;
  // The whole array, then a 3 x 2 x 2 box of host texels (1, 1, 1) to array texels (4, 3, 2).
  cudaMemcpy3DParms copy = {};
  copy.srcPtr = make_cudaPitchedPtr(host.data(), DX * sizeof(int), DX, DY);
  copy.dstArray = array;
  copy.extent = make_cudaExtent(DX, DY, DZ);
  copy.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&copy));
  model = host;
  std::vector<int> box(n);
  for (int i = 0; i < n; ++i) box[i] = 100000 + i;
  copy.srcPtr = make_cudaPitchedPtr(box.data(), DX * sizeof(int), DX, DY);
  // With an array on either side, positions and the extent's width are in its elements on
  // both sides: NVIDIA's runtime scales the memory side's x by the texel size too.
  copy.srcPos = make_cudaPos(1, 1, 1);
  copy.dstPos = make_cudaPos(4, 3, 2);
  copy.extent = make_cudaExtent(3, 2, 2);
  CHECK(cudaMemcpy3D(&copy));
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x)
        model[((z + 2) * DY + y + 3) * DX + x + 4] = box[((z + 1) * DY + y + 1) * DX + x + 1];
  cudaMemcpy3DParms out = {};
  out.srcArray = array;
  out.dstPtr = make_cudaPitchedPtr(back.data(), DX * sizeof(int), DX, DY);
  out.extent = make_cudaExtent(DX, DY, DZ);
  out.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&out));
  expect_equal("cudaMemcpy3D to and from a 3D array", back.data(), model.data(), n);

  cudaTextureObject_t tex = texture(array, cudaAddressModeClamp, cudaFilterModePoint, 0);
  int *d_out;
  CHECK(cudaMallocManaged(&d_out, n * sizeof(int)));
  read_3d<<<DZ, dim3(DX, DY)>>>(tex, d_out);
  CHECK(cudaDeviceSynchronize());
  expect_equal("tex3D, point", d_out, model.data(), n);
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(d_out));
  CHECK(cudaFreeArray(array));
}

static void texture_layered() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMalloc3DArray(&array, &desc, make_cudaExtent(LW, LH, LN), cudaArrayLayered));
  const int n = LW * LH * LN;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = (float)(i * 11 % 97);
  cudaMemcpy3DParms copy = {};
  copy.srcPtr = make_cudaPitchedPtr(host.data(), LW * sizeof(float), LW, LH);
  copy.dstArray = array;
  copy.extent = make_cudaExtent(LW, LH, LN);
  copy.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&copy));
  unsigned int flags;
  cudaExtent extent;
  CHECK(cudaArrayGetInfo(nullptr, &extent, &flags, array));
  require(flags == cudaArrayLayered && extent.depth == LN, "cudaArrayGetInfo of a layered "
                                                           "array");
  cudaTextureObject_t tex = texture(array, cudaAddressModeClamp, cudaFilterModePoint, 0);
  float *d_out;
  CHECK(cudaMallocManaged(&d_out, n * sizeof(float)));
  read_layers<<<LN, dim3(LW, LH)>>>(tex, d_out);
  CHECK(cudaDeviceSynchronize());
  expect_equal("tex2DLayered, point", d_out, host.data(), n);
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(d_out));
  CHECK(cudaFreeArray(array));
}

static void surface() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<short2>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &desc, W, H, cudaArraySurfaceLoadStore));
  unsigned int flags;
  CHECK(cudaArrayGetInfo(nullptr, nullptr, &flags, array));
  require(flags == cudaArraySurfaceLoadStore, "cudaArrayGetInfo: the surface flag");
  cudaResourceDesc resource = {};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaSurfaceObject_t surf;
  CHECK(cudaCreateSurfaceObject(&surf, &resource));
  write_surface<<<H, W>>>(surf);
  CHECK(cudaDeviceSynchronize());
  std::vector<short2> back(W * H);
  CHECK(cudaMemcpy2DFromArray(back.data(), W * sizeof(short2), array, 0, 0,
                              W * sizeof(short2), H, cudaMemcpyDeviceToHost));
  std::vector<int> got(2 * W * H), want(2 * W * H);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      int i = y * W + x;
      want[2 * i] = (short)(x * 3 - y), want[2 * i + 1] = (short)(y * 100 + x);
      got[2 * i] = back[i].x, got[2 * i + 1] = back[i].y;
    }
  expect_equal("surf2Dwrite, then cudaMemcpy2DFromArray", got.data(), want.data(), got.size());
  short2 *d_out;
  CHECK(cudaMallocManaged(&d_out, W * H * sizeof(short2)));
  read_surface<<<H, W>>>(surf, d_out);
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < W * H; ++i) got[2 * i] = d_out[i].x, got[2 * i + 1] = d_out[i].y;
  expect_equal("surf2Dread", got.data(), want.data(), got.size());
  CHECK(cudaDestroySurfaceObject(surf));
  CHECK(cudaFree(d_out));
  CHECK(cudaFreeArray(array));
}

int main() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &desc, W, H));
  check_info(array);
  std::vector<float> model(W * H);
  copies_2d(array, model);
  copies_1d(array, model);
  float *out;
  CHECK(cudaMallocManaged(&out, W * H * sizeof(float)));
  textures_2d(array, model, out);
  CHECK(cudaFree(out));
  CHECK(cudaFreeArray(array));
  texture_3d();
  texture_layered();
  surface();
  return finish();
}
