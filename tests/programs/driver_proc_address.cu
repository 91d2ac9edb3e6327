// The driver API's entry points found by cuGetProcAddress (as CUDA 12+ runtimes find them)
// after dlsym finds only cuGetProcAddress itself: a created context (cuCtxCreate, v4 in
// CUDA 13) pushed and popped, memory (device, page-locked host, memsets, copies, pointer
// attributes, cuMemGetInfo), streams and events with timing, and the answer for a symbol that
// does not exist.
#include <vector>

#include "driver_api.h"

DRIVER_FN(cuGetProcAddress);
DRIVER_FN(cuGetErrorName);
DRIVER_FN(cuInit);
DRIVER_FN(cuDeviceGet);
DRIVER_FN(cuCtxCreate);
DRIVER_FN(cuCtxDestroy);
DRIVER_FN(cuCtxPushCurrent);
DRIVER_FN(cuCtxPopCurrent);
DRIVER_FN(cuCtxGetCurrent);
DRIVER_FN(cuMemAlloc);
DRIVER_FN(cuMemFree);
DRIVER_FN(cuMemAllocHost);
DRIVER_FN(cuMemFreeHost);
DRIVER_FN(cuMemsetD32);
DRIVER_FN(cuMemsetD8);
DRIVER_FN(cuMemcpyDtoD);
DRIVER_FN(cuMemcpyDtoH);
DRIVER_FN(cuMemcpyHtoDAsync);
DRIVER_FN(cuMemcpyDtoHAsync);
DRIVER_FN(cuMemGetInfo);
DRIVER_FN(cuPointerGetAttribute);
DRIVER_FN(cuStreamCreate);
DRIVER_FN(cuStreamSynchronize);
DRIVER_FN(cuStreamDestroy);
DRIVER_FN(cuEventCreate);
DRIVER_FN(cuEventRecord);
DRIVER_FN(cuEventSynchronize);
DRIVER_FN(cuEventElapsedTime);
DRIVER_FN(cuEventDestroy);

static inline const char *driver_error_name(CUresult r) {
  const char *name = nullptr;
  if (p_cuGetErrorName == nullptr || p_cuGetErrorName(r, &name) != CUDA_SUCCESS) return "?";
  return name;
}

// Asks for `symbol` as CUDA 13.0's headers name it (cuGetProcAddress picks the version).
static void proc_address(const char *symbol, void **out) {
  CUdriverProcAddressQueryResult found;
  CUresult r = p_cuGetProcAddress(symbol, out, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || *out == nullptr) {
    printf("FAIL: cuGetProcAddress(%s): %s\n", symbol, driver_error_name(r));
    exit(1);
  }
}

#define LOAD_PROC(name) proc_address(#name, (void **)&p_##name)

static void load_entry_points() {
  LOAD_PROC(cuGetErrorName);
  LOAD_PROC(cuInit);
  LOAD_PROC(cuDeviceGet);
  LOAD_PROC(cuCtxCreate);
  LOAD_PROC(cuCtxDestroy);
  LOAD_PROC(cuCtxPushCurrent);
  LOAD_PROC(cuCtxPopCurrent);
  LOAD_PROC(cuCtxGetCurrent);
  LOAD_PROC(cuMemAlloc);
  LOAD_PROC(cuMemFree);
  LOAD_PROC(cuMemAllocHost);
  LOAD_PROC(cuMemFreeHost);
  LOAD_PROC(cuMemsetD32);
  LOAD_PROC(cuMemsetD8);
  LOAD_PROC(cuMemcpyDtoD);
  LOAD_PROC(cuMemcpyDtoH);
  LOAD_PROC(cuMemcpyHtoDAsync);
  LOAD_PROC(cuMemcpyDtoHAsync);
  LOAD_PROC(cuMemGetInfo);
  LOAD_PROC(cuPointerGetAttribute);
  LOAD_PROC(cuStreamCreate);
  LOAD_PROC(cuStreamSynchronize);
  LOAD_PROC(cuStreamDestroy);
  LOAD_PROC(cuEventCreate);
  LOAD_PROC(cuEventRecord);
  LOAD_PROC(cuEventSynchronize);
  LOAD_PROC(cuEventElapsedTime);
  LOAD_PROC(cuEventDestroy);
  printf("cuGetProcAddress found every entry point\n");
}

static void check_missing_symbol() {
  void *fn = nullptr;
  CUdriverProcAddressQueryResult found;
  CUresult r = p_cuGetProcAddress("cuNoSuchFunction", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                  &found);
  // The call itself succeeds (as NVIDIA's driver 580 answers); the status says not found.
  drv_expect("cuGetProcAddress(cuNoSuchFunction)", r, CUDA_SUCCESS);
  printf("symbol status not found: %s, pointer null: %s\n",
         found == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? "yes" : "no", fn ? "no" : "yes");
}

static void check_memory() {
  const int n = 1 << 16;
  CUdeviceptr a, b;
  DRV_CHECK(p_cuMemAlloc(&a, n * sizeof(unsigned)));
  DRV_CHECK(p_cuMemAlloc(&b, n * sizeof(unsigned)));
  DRV_CHECK(p_cuMemsetD32(a, 0xC0FFEE01u, n));
  DRV_CHECK(p_cuMemsetD8(a + 100, 0x22, 7));
  DRV_CHECK(p_cuMemcpyDtoD(b, a, n * sizeof(unsigned)));
  std::vector<unsigned> got(n), want(n, 0xC0FFEE01u);
  unsigned char *w = reinterpret_cast<unsigned char *>(want.data());
  for (int i = 100; i < 107; ++i) w[i] = 0x22;
  DRV_CHECK(p_cuMemcpyDtoH(got.data(), b, n * sizeof(unsigned)));
  printf("cuMemsetD32, cuMemsetD8, cuMemcpyDtoD: %s\n", got == want ? "ok" : "MISMATCH");
  drv_require(got == want, "memset and copy");

  unsigned memory_type = 0;
  DRV_CHECK(p_cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
  printf("device pointer memory type is DEVICE: %s\n",
         memory_type == CU_MEMORYTYPE_DEVICE ? "yes" : "no");
  size_t free_bytes = 0, total = 0;
  DRV_CHECK(p_cuMemGetInfo(&free_bytes, &total));
  drv_require(total > 0 && free_bytes <= total, "0 < free <= total");
  DRV_CHECK(p_cuMemFree(a));
  DRV_CHECK(p_cuMemFree(b));
}

static void check_stream_and_events() {
  const int n = 4096;
  CUstream s;
  CUevent start, stop;
  DRV_CHECK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  DRV_CHECK(p_cuEventCreate(&start, CU_EVENT_DEFAULT));
  DRV_CHECK(p_cuEventCreate(&stop, CU_EVENT_DEFAULT));
  int *host;
  DRV_CHECK(p_cuMemAllocHost((void **)&host, n * sizeof(int)));
  for (int i = 0; i < n; ++i) host[i] = i * 5;
  CUdeviceptr d;
  DRV_CHECK(p_cuMemAlloc(&d, n * sizeof(int)));
  DRV_CHECK(p_cuEventRecord(start, s));
  DRV_CHECK(p_cuMemcpyHtoDAsync(d, host, n * sizeof(int), s));
  DRV_CHECK(p_cuMemcpyDtoHAsync(host + n / 2, d, n / 2 * sizeof(int), s));
  DRV_CHECK(p_cuEventRecord(stop, s));
  DRV_CHECK(p_cuStreamSynchronize(s));
  DRV_CHECK(p_cuEventSynchronize(stop));
  bool ok = true;
  for (int i = 0; i < n; ++i) ok &= host[i] == (i % (n / 2)) * 5;
  printf("async copies on a stream: %s\n", ok ? "ok" : "MISMATCH");
  drv_require(ok, "async copies");
  float ms = -1;
  DRV_CHECK(p_cuEventElapsedTime(&ms, start, stop));
  printf("elapsed time >= 0: %s\n", ms >= 0 ? "yes" : "no");
  DRV_CHECK(p_cuMemFreeHost(host));
  DRV_CHECK(p_cuMemFree(d));
  DRV_CHECK(p_cuEventDestroy(start));
  DRV_CHECK(p_cuEventDestroy(stop));
  DRV_CHECK(p_cuStreamDestroy(s));
}

int main() {
  void *lib = open_libcuda();
  LOAD_DLSYM(lib, cuGetProcAddress);
  load_entry_points();
  DRV_CHECK(p_cuInit(0));
  check_missing_symbol();
  CUdevice dev;
  DRV_CHECK(p_cuDeviceGet(&dev, 0));
  CUcontext ctx, current, popped;
  DRV_CHECK(p_cuCtxCreate(&ctx, nullptr, 0, dev));
  DRV_CHECK(p_cuCtxGetCurrent(&current));
  printf("created context is current: %s\n", current == ctx ? "yes" : "no");
  check_memory();
  check_stream_and_events();
  DRV_CHECK(p_cuCtxPopCurrent(&popped));
  drv_require(popped == ctx, "cuCtxPopCurrent returns the created context");
  DRV_CHECK(p_cuCtxPushCurrent(ctx));
  DRV_CHECK(p_cuCtxDestroy(ctx));
  return drv_finish();
}
