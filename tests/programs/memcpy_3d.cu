// 3D memory: cudaMalloc3D, cudaMemcpy3D between host and device and between two device
// volumes with source and destination positions, cudaMemset3D of a sub-box, and a kernel that
// addresses the volume through its pitched pointer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common.h"

const int NX = 37, NY = 19, NZ = 11;  // elements (int) per row, rows per slice, slices

__global__ void negate(cudaPitchedPtr v, int nx, int ny, int nz) {
  int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  if (x < nx && y < ny && z < nz) {
    char *slice = static_cast<char *>(v.ptr) + (size_t)z * v.pitch * v.ysize;
    int *row = reinterpret_cast<int *>(slice + (size_t)y * v.pitch);
    row[x] = -row[x];
  }
}

static cudaMemcpy3DParms copy_params(cudaPitchedPtr src, cudaPos src_pos, cudaPitchedPtr dst,
                                     cudaPos dst_pos, cudaExtent extent, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p = {};
  p.srcPtr = src;
  p.srcPos = src_pos;
  p.dstPtr = dst;
  p.dstPos = dst_pos;
  p.extent = extent;
  p.kind = kind;
  return p;
}

int main() {
  std::vector<int> host(NX * NY * NZ), out(NX * NY * NZ), want(NX * NY * NZ);
  for (int i = 0; i < NX * NY * NZ; ++i) host[i] = i * 7 + 1;
  cudaExtent extent = make_cudaExtent(NX * sizeof(int), NY, NZ);
  cudaPitchedPtr a, b;
  CHECK(cudaMalloc3D(&a, extent));
  CHECK(cudaMalloc3D(&b, extent));
  require(a.pitch >= NX * sizeof(int) && a.xsize == NX * sizeof(int) && a.ysize == NY,
          "cudaMalloc3D pitch and sizes");
  cudaPitchedPtr h = make_cudaPitchedPtr(host.data(), NX * sizeof(int), NX * sizeof(int), NY);
  cudaPitchedPtr o = make_cudaPitchedPtr(out.data(), NX * sizeof(int), NX * sizeof(int), NY);
  cudaPos zero = make_cudaPos(0, 0, 0);

  cudaMemcpy3DParms up = copy_params(h, zero, a, zero, extent, cudaMemcpyHostToDevice);
  CHECK(cudaMemcpy3D(&up));
  negate<<<dim3(NY, NZ), 64>>>(a, NX, NY, NZ);
  CHECK(cudaGetLastError());
  cudaMemcpy3DParms down = copy_params(a, zero, o, zero, extent, cudaMemcpyDeviceToHost);
  CHECK(cudaMemcpy3D(&down));
  for (int i = 0; i < NX * NY * NZ; ++i) want[i] = -host[i];
  expect_equal("3D H2D, kernel, D2H", out.data(), want.data(), want.size());

  // A 10x5x4 box from a at (x=3, y=2, z=1) to b at (x=20, y=10, z=6); b is zeroed first.
  CHECK(cudaMemset3D(b, 0, extent));
  cudaExtent box = make_cudaExtent(10 * sizeof(int), 5, 4);
  cudaMemcpy3DParms across = copy_params(a, make_cudaPos(3 * sizeof(int), 2, 1), b,
                                         make_cudaPos(20 * sizeof(int), 10, 6), box,
                                         cudaMemcpyDeviceToDevice);
  CHECK(cudaMemcpy3D(&across));
  cudaMemcpy3DParms back = copy_params(b, zero, o, zero, extent, cudaMemcpyDeviceToHost);
  CHECK(cudaMemcpy3D(&back));
  std::fill(want.begin(), want.end(), 0);
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 10; ++x)
        want[((z + 6) * NY + y + 10) * NX + x + 20] = -host[((z + 1) * NY + y + 2) * NX + x + 3];
  expect_equal("3D D2D box with positions", out.data(), want.data(), want.size());

  // cudaMemset3D of a 6-byte x 3 x 2 box of b starting at byte 5 of row 1 of slice 2.
  cudaPitchedPtr corner = b;
  corner.ptr = static_cast<char *>(b.ptr) + 2 * b.pitch * NY + 1 * b.pitch + 5;
  CHECK(cudaMemset3D(corner, 0x11, make_cudaExtent(6, 3, 2)));
  CHECK(cudaMemcpy3D(&back));
  unsigned char *w = reinterpret_cast<unsigned char *>(want.data());
  for (int z = 2; z < 4; ++z)
    for (int y = 1; y < 4; ++y)
      for (int x = 5; x < 11; ++x) w[(z * NY + y) * NX * sizeof(int) + x] = 0x11;
  expect_equal("cudaMemset3D sub-box", out.data(), want.data(), want.size());

  CHECK(cudaFree(a.ptr));
  CHECK(cudaFree(b.ptr));
  return finish();
}
