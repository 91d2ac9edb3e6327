// The driver API alone, through dlopen("libcuda.so.1"): initialisation, versions, devices and
// attributes, the primary context, a module loaded from PTX text written by hand (below), its
// functions and a global, launches with kernelParams and with a packed argument buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER), and the errors of a missing function and of a block
// larger than any device allows.
#include <cstring>
#include <vector>

#include "driver_api.h"

// y[i] = a * x[i] + y[i] for i < n, and a counter of launches bumped by thread 0 of
// `count_launch`. ISA 7.0 and sm_52 so that any driver since CUDA 11 can JIT it.
static const char kPtx[] = R"(
.version 7.0
.target sm_52
.address_size 64

.visible .global .align 4 .u32 launches = 5;

.visible .entry axpy(
  .param .u64 axpy_y,
  .param .u64 axpy_x,
  .param .f32 axpy_a,
  .param .u32 axpy_n
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;

  ld.param.u64 %rd1, [axpy_y];
  ld.param.u64 %rd2, [axpy_x];
  ld.param.f32 %f1, [axpy_a];
  ld.param.u32 %r1, [axpy_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f2, [%rd7];
  ld.global.f32 %f3, [%rd6];
  fma.rn.f32 %f4, %f1, %f2, %f3;
  st.global.f32 [%rd6], %f4;
DONE:
  ret;
}

.visible .entry count_launch()
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;

  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra END;
  atom.global.add.u32 %r2, [launches], 1;
END:
  ret;
}
)";

DRIVER_FN(cuInit);
DRIVER_FN(cuDriverGetVersion);
DRIVER_FN(cuDeviceGetCount);
DRIVER_FN(cuDeviceGet);
DRIVER_FN(cuDeviceGetAttribute);
DRIVER_FN(cuDeviceGetName);
DRIVER_FN(cuDeviceTotalMem);
DRIVER_FN(cuDevicePrimaryCtxRetain);
DRIVER_FN(cuDevicePrimaryCtxRelease);
DRIVER_FN(cuCtxSetCurrent);
DRIVER_FN(cuCtxGetCurrent);
DRIVER_FN(cuCtxSynchronize);
DRIVER_FN(cuModuleLoadData);
DRIVER_FN(cuModuleGetFunction);
DRIVER_FN(cuModuleGetGlobal);
DRIVER_FN(cuModuleUnload);
DRIVER_FN(cuMemAlloc);
DRIVER_FN(cuMemFree);
DRIVER_FN(cuMemcpyHtoD);
DRIVER_FN(cuMemcpyDtoH);
DRIVER_FN(cuLaunchKernel);
DRIVER_FN(cuGetErrorName);

static inline const char *driver_error_name(CUresult r) {
  const char *name = nullptr;
  if (p_cuGetErrorName == nullptr || p_cuGetErrorName(r, &name) != CUDA_SUCCESS) return "?";
  return name;
}

static void load_entry_points(void *lib) {
  LOAD_DLSYM(lib, cuGetErrorName);
  LOAD_DLSYM(lib, cuInit);
  LOAD_DLSYM(lib, cuDriverGetVersion);
  LOAD_DLSYM(lib, cuDeviceGetCount);
  LOAD_DLSYM(lib, cuDeviceGet);
  LOAD_DLSYM(lib, cuDeviceGetAttribute);
  LOAD_DLSYM(lib, cuDeviceGetName);
  LOAD_DLSYM(lib, cuDeviceTotalMem);
  LOAD_DLSYM(lib, cuDevicePrimaryCtxRetain);
  LOAD_DLSYM(lib, cuDevicePrimaryCtxRelease);
  LOAD_DLSYM(lib, cuCtxSetCurrent);
  LOAD_DLSYM(lib, cuCtxGetCurrent);
  LOAD_DLSYM(lib, cuCtxSynchronize);
  LOAD_DLSYM(lib, cuModuleLoadData);
  LOAD_DLSYM(lib, cuModuleGetFunction);
  LOAD_DLSYM(lib, cuModuleGetGlobal);
  LOAD_DLSYM(lib, cuModuleUnload);
  LOAD_DLSYM(lib, cuMemAlloc);
  LOAD_DLSYM(lib, cuMemFree);
  LOAD_DLSYM(lib, cuMemcpyHtoD);
  LOAD_DLSYM(lib, cuMemcpyDtoH);
  LOAD_DLSYM(lib, cuLaunchKernel);
}

static CUdevice first_device() {
  int version = 0, count = 0;
  DRV_CHECK(p_cuDriverGetVersion(&version));
  drv_require(version >= 13000, "driver version >= 13000");
  DRV_CHECK(p_cuDeviceGetCount(&count));
  printf("device count >= 1: %s\n", count >= 1 ? "yes" : "no");
  CUdevice dev;
  DRV_CHECK(p_cuDeviceGet(&dev, 0));
  int warp = 0, max_threads = 0;
  DRV_CHECK(p_cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  DRV_CHECK(p_cuDeviceGetAttribute(&max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
  printf("warp size: %d, max threads per block >= 1024: %s\n", warp,
         max_threads >= 1024 ? "yes" : "no");
  char name[256] = {0};
  size_t total = 0;
  DRV_CHECK(p_cuDeviceGetName(name, sizeof name, dev));
  DRV_CHECK(p_cuDeviceTotalMem(&total, dev));
  drv_require(name[0] != '\0' && total > 0, "device has a name and memory");
  return dev;
}

static void run_axpy(CUfunction axpy) {
  const unsigned n = 1000;
  std::vector<float> x(n), y(n), want(n);
  for (unsigned i = 0; i < n; ++i) x[i] = (float)i, y[i] = 2.0f * i, want[i] = 3.0f * i + 2.0f * i;
  CUdeviceptr dx, dy;
  DRV_CHECK(p_cuMemAlloc(&dx, n * sizeof(float)));
  DRV_CHECK(p_cuMemAlloc(&dy, n * sizeof(float)));
  DRV_CHECK(p_cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
  DRV_CHECK(p_cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
  float a = 3.0f;
  void *params[] = {&dy, &dx, &a, (void *)&n};
  DRV_CHECK(p_cuLaunchKernel(axpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  DRV_CHECK(p_cuMemcpyDtoH(y.data(), dy, n * sizeof(float)));
  printf("axpy with kernelParams: %s\n", y == want ? "ok" : "MISMATCH");
  drv_require(y == want, "axpy with kernelParams");

  // The same launch again (y += 3x) with its arguments packed as the PTX lays them out.
  struct { CUdeviceptr y, x; float a; unsigned n; } packed = {dy, dx, 3.0f, n};
  size_t size = sizeof packed;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  DRV_CHECK(p_cuLaunchKernel(axpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra));
  DRV_CHECK(p_cuMemcpyDtoH(y.data(), dy, n * sizeof(float)));
  for (unsigned i = 0; i < n; ++i) want[i] += 3.0f * i;
  printf("axpy with a packed buffer: %s\n", y == want ? "ok" : "MISMATCH");
  drv_require(y == want, "axpy with a packed buffer");
  DRV_CHECK(p_cuMemFree(dx));
  DRV_CHECK(p_cuMemFree(dy));
}

static void check_global(CUmodule module, CUfunction count_launch) {
  CUdeviceptr launches;
  size_t bytes = 0;
  DRV_CHECK(p_cuModuleGetGlobal(&launches, &bytes, module, "launches"));
  printf("global 'launches': %zu bytes\n", bytes);
  for (int k = 0; k < 3; ++k)
    DRV_CHECK(p_cuLaunchKernel(count_launch, 4, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  DRV_CHECK(p_cuCtxSynchronize());
  unsigned value = 0;
  DRV_CHECK(p_cuMemcpyDtoH(&value, launches, sizeof value));
  printf("launches after 3 launches of 4 blocks from 5: %u\n", value);
}

static void check_errors(CUmodule module, CUfunction axpy) {
  CUfunction missing;
  drv_expect("cuModuleGetFunction(missing)", p_cuModuleGetFunction(&missing, module, "missing"),
             CUDA_ERROR_NOT_FOUND);
  drv_expect("cuLaunchKernel with 2048 threads per block",
             p_cuLaunchKernel(axpy, 1, 1, 1, 2048, 1, 1, 0, nullptr, nullptr, nullptr),
             CUDA_ERROR_INVALID_VALUE);
}

int main() {
  load_entry_points(open_libcuda());
  DRV_CHECK(p_cuInit(0));
  CUdevice dev = first_device();
  CUcontext ctx, current = nullptr;
  DRV_CHECK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
  DRV_CHECK(p_cuCtxSetCurrent(ctx));
  DRV_CHECK(p_cuCtxGetCurrent(&current));
  drv_require(current == ctx, "cuCtxGetCurrent returns the primary context");
  CUmodule module;
  DRV_CHECK(p_cuModuleLoadData(&module, kPtx));
  CUfunction axpy, count_launch;
  DRV_CHECK(p_cuModuleGetFunction(&axpy, module, "axpy"));
  DRV_CHECK(p_cuModuleGetFunction(&count_launch, module, "count_launch"));
  run_axpy(axpy);
  check_global(module, count_launch);
  check_errors(module, axpy);
  DRV_CHECK(p_cuModuleUnload(module));
  DRV_CHECK(p_cuDevicePrimaryCtxRelease(dev));
  return drv_finish();
}
