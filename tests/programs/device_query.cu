// Device queries: count, current device, properties, attributes and versions. Only facts that
// hold on every CUDA device (and that a portable runtime must report) are printed.
#include "common.h"

static void check_properties(const cudaDeviceProp &p) {
  printf("warpSize: %d\n", p.warpSize);
  require(p.warpSize == 32, "warpSize == 32");
  require(p.maxThreadsPerBlock >= 1024, "maxThreadsPerBlock >= 1024");
  require(p.maxThreadsDim[0] >= 1024 && p.maxThreadsDim[1] >= 1024 && p.maxThreadsDim[2] >= 64,
          "maxThreadsDim >= (1024, 1024, 64)");
  require(p.maxGridSize[0] >= 2147483647 && p.maxGridSize[1] >= 65535 &&
              p.maxGridSize[2] >= 65535,
          "maxGridSize >= (2^31-1, 65535, 65535)");
  require(p.sharedMemPerBlock >= 48 * 1024, "sharedMemPerBlock >= 48 KiB");
  require(p.totalGlobalMem > 0, "totalGlobalMem > 0");
  require(p.multiProcessorCount >= 1, "multiProcessorCount >= 1");
  require(p.regsPerBlock > 0, "regsPerBlock > 0");
  require(p.totalConstMem >= 64 * 1024, "totalConstMem >= 64 KiB");
  require(p.name[0] != '\0', "name is not empty");
  require(p.major >= 1, "major >= 1");
  printf("properties: ok\n");
}

static int attribute(cudaDeviceAttr attr) {
  int value = -1;
  CHECK(cudaDeviceGetAttribute(&value, attr, 0));
  return value;
}

static void check_attributes(const cudaDeviceProp &p) {
  require(attribute(cudaDevAttrWarpSize) == 32, "attribute WarpSize == 32");
  require(attribute(cudaDevAttrMaxThreadsPerBlock) == p.maxThreadsPerBlock,
          "attribute MaxThreadsPerBlock == property");
  require(attribute(cudaDevAttrMultiProcessorCount) == p.multiProcessorCount,
          "attribute MultiProcessorCount == property");
  require(attribute(cudaDevAttrMaxBlockDimX) == p.maxThreadsDim[0], "MaxBlockDimX == property");
  require(attribute(cudaDevAttrMaxGridDimY) == p.maxGridSize[1], "MaxGridDimY == property");
  require(attribute(cudaDevAttrComputeCapabilityMajor) == p.major, "CC major == property");
  require(attribute(cudaDevAttrComputeCapabilityMinor) == p.minor, "CC minor == property");
  require((size_t)attribute(cudaDevAttrMaxSharedMemoryPerBlock) == p.sharedMemPerBlock,
          "MaxSharedMemoryPerBlock == property");
  require(attribute(cudaDevAttrUnifiedAddressing) == 1, "UnifiedAddressing == 1");
  printf("attributes: ok\n");
}

static void check_versions() {
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  require(driver >= 13000, "driver version >= 13000");
  require(runtime >= 13000, "runtime version >= 13000");
  printf("versions: ok\n");
}

static void check_memory_info() {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  require(total_bytes > 0 && free_bytes <= total_bytes, "0 < free <= total");
  printf("memory info: ok\n");
}

static void check_invalid_device(int count) {
  expect_error("cudaSetDevice(count)", cudaSetDevice(count), cudaErrorInvalidDevice);
  int value = 0;
  expect_error("cudaDeviceGetAttribute(count)",
               cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, count),
               cudaErrorInvalidDevice);
  cudaGetLastError();
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  require(count >= 1, "at least one device");
  printf("device count >= 1: %s\n", count >= 1 ? "yes" : "no");
  CHECK(cudaSetDevice(0));
  int current = -1;
  CHECK(cudaGetDevice(&current));
  printf("current device: %d\n", current);
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  check_properties(p);
  check_attributes(p);
  check_versions();
  check_memory_info();
  check_invalid_device(count);
  return finish();
}
