// Runtime calls beyond the corpus's shared-cudart programs, for ptxport's libcudart.so.13
// (built with -cudart shared): __managed__ variables (registered, then initialised by
// __cudaInitModule), symbols with an offset, 3D pitched memory, function attributes, pointer
// attributes, a driver function through cudaGetDriverEntryPoint, error names and strings,
// the last error. Prints one line per check; each says what it saw.
#include <cstdio>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

__managed__ int counter = 5;
__device__ int table[8];

__global__ void bump(int by) { atomicAdd(&counter, by); }

__global__ void read_table(int *out) { out[threadIdx.x] = table[threadIdx.x] * 2; }

int main() {
  bump<<<2, 32>>>(1);
  cudaError_t synced = cudaDeviceSynchronize();
  printf("managed: %s %d\n", cudaGetErrorName(synced), counter);

  int values[4] = {10, 20, 30, 40}, out[8] = {0}, *d_out;
  size_t size = 0;
  cudaGetSymbolSize(&size, table);
  cudaMemcpyToSymbol(table, values, sizeof values, 4 * sizeof(int));
  cudaMalloc(&d_out, sizeof out);
  read_table<<<1, 8>>>(d_out);
  cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost);
  printf("symbol: size %zu, %d %d %d\n", size, out[0], out[4], out[7]);
  printf("overrun: %s\n",
         cudaGetErrorName(cudaMemcpyToSymbol(table, values, sizeof values, 6 * sizeof(int))));

  cudaExtent extent = make_cudaExtent(10 * sizeof(int), 3, 2);
  cudaPitchedPtr box;
  cudaMalloc3D(&box, extent);
  cudaMemset3D(box, 0, extent);
  int host[2][3][10];
  for (int i = 0; i < 60; i++) (&host[0][0][0])[i] = i;
  cudaMemcpy3DParms up = {};
  up.srcPtr = make_cudaPitchedPtr(host, 10 * sizeof(int), 10 * sizeof(int), 3);
  up.dstPtr = box;
  up.extent = extent;
  up.kind = cudaMemcpyHostToDevice;
  cudaError_t e1 = cudaMemcpy3D(&up);
  int back[2][3][10] = {};
  cudaMemcpy3DParms down = {};
  down.srcPtr = box;
  down.dstPtr = make_cudaPitchedPtr(back, 10 * sizeof(int), 10 * sizeof(int), 3);
  down.extent = extent;
  down.kind = cudaMemcpyDeviceToHost;
  cudaError_t e2 = cudaMemcpy3D(&down);
  printf("3d: %s %s pitch>=40 %d, %d %d\n", cudaGetErrorName(e1), cudaGetErrorName(e2),
         box.pitch >= 40, memcmp(host, back, sizeof host) == 0, back[1][2][9]);

  cudaFuncAttributes attributes;
  cudaFuncGetAttributes(&attributes, read_table);
  printf("function: max threads >= 256 %d\n", attributes.maxThreadsPerBlock >= 256);
  size_t params = 0, offset = 1, param_size = 0;
  cudaFuncGetParamCount((const void *)bump, &params);
  cudaFuncGetParamInfo((const void *)bump, 0, &offset, &param_size);
  printf("parameters: %zu, at %zu, %zu bytes\n", params, offset, param_size);
  int stream_device = -1;
  cudaStreamGetDevice(0, &stream_device);
  printf("stream device: %d\n", stream_device);

  cudaPointerAttributes pointer;
  cudaPointerGetAttributes(&pointer, d_out);
  int on_device = pointer.type == cudaMemoryTypeDevice;
  cudaPointerGetAttributes(&pointer, values);
  printf("pointers: device %d host %d\n", on_device, pointer.type == cudaMemoryTypeUnregistered);

  void *entry = nullptr;
  cudaDriverEntryPointQueryResult found;
  cudaGetDriverEntryPoint("cuDriverGetVersion", &entry, cudaEnableDefault, &found);
  int version = 0;
  CUresult r = entry ? ((CUresult(*)(int *))entry)(&version) : CUDA_ERROR_NOT_FOUND;
  printf("entry point: %d %d %d\n", found == cudaDriverEntryPointSuccess, r, version > 0);

  printf("errors: %s / %s\n", cudaGetErrorName(cudaErrorIllegalAddress),
         cudaGetErrorString(cudaErrorIllegalAddress));
  void *p = nullptr;
  cudaMalloc(&p, (size_t)1 << 62);
  cudaError_t first = cudaGetLastError(), second = cudaGetLastError();
  printf("last error: %s then %s\n", cudaGetErrorName(first), cudaGetErrorName(second));
  cudaFree(d_out);
  cudaFree(box.ptr);
  return 0;
}
