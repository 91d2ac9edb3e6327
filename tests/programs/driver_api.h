// The driver API through dlopen("libcuda.so.1"), as programs that do not link libcuda do:
// each entry point is looked up by the name cuda.h maps it to (cuMemAlloc -> cuMemAlloc_v2)
// and called through a pointer of the type cuda.h declares.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#define DRV_STR2(x) #x
#define DRV_STR(x) DRV_STR2(x)  // expands cuda.h's versioning macros first
#define DRIVER_FN(name) static decltype(&name) p_##name = nullptr
#define LOAD_DLSYM(lib, name) load_symbol(lib, DRV_STR(name), (void **)&p_##name)

static int g_driver_failures = 0;

static inline void load_symbol(void *lib, const char *symbol, void **out) {
  *out = dlsym(lib, symbol);
  if (*out == nullptr) {
    printf("FAIL: dlsym(%s) found nothing\n", symbol);
    exit(1);
  }
}

static inline const char *driver_error_name(CUresult r);

#define DRV_CHECK(call) drv_check((call), #call, __LINE__)

static inline void drv_check(CUresult r, const char *what, int line) {
  if (r != CUDA_SUCCESS) {
    printf("FAIL line %d: %s returned %s\n", line, what, driver_error_name(r));
    exit(1);
  }
}

static inline void drv_require(bool ok, const char *what) {
  if (!ok) {
    printf("FAIL: %s\n", what);
    ++g_driver_failures;
  }
}

static inline void drv_expect(const char *label, CUresult got, CUresult want) {
  printf("%s: %s\n", label, driver_error_name(got));
  if (got != want) {
    printf("FAIL: %s: expected %s\n", label, driver_error_name(want));
    ++g_driver_failures;
  }
}

static inline int drv_finish() {
  if (g_driver_failures) {
    printf("FAIL (%d)\n", g_driver_failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}

static inline void *open_libcuda() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    printf("FAIL: dlopen(libcuda.so.1): %s\n", dlerror());
    exit(1);
  }
  return lib;
}
