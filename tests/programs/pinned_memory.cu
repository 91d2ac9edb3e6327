// Page-locked host memory: cudaMallocHost, cudaHostAlloc (portable, mapped, write-combined)
// with cudaHostGetDevicePointer and a kernel writing host memory directly, cudaHostRegister of
// ordinary memory (mapped) and its flags, double registration (an error), and
// cudaPointerGetAttributes on each kind.
#include <cstdlib>
#include <vector>

#include "common.h"

__global__ void fill_index_squares(long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (long long)i * i;
}

static void check_type(const char *label, const void *p, cudaMemoryType want) {
  cudaPointerAttributes a;
  CHECK(cudaPointerGetAttributes(&a, p));
  printf("%s: type %d\n", label, (int)a.type);
  require(a.type == want, label);
}

static void expect_squares(const char *label, const long long *got, int n) {
  std::vector<long long> want(n);
  for (int i = 0; i < n; ++i) want[i] = (long long)i * i;
  expect_equal(label, got, want.data(), n);
}

int main() {
  const int n = 10000;
  long long *pinned;
  CHECK(cudaMallocHost(&pinned, n * sizeof(long long)));
  long long *d;
  CHECK(cudaMalloc(&d, n * sizeof(long long)));
  fill_index_squares<<<(n + 127) / 128, 128>>>(d, n);
  CHECK(cudaMemcpy(pinned, d, n * sizeof(long long), cudaMemcpyDeviceToHost));
  expect_squares("cudaMallocHost copy target", pinned, n);
  check_type("cudaMallocHost pointer", pinned, cudaMemoryTypeHost);
  check_type("cudaMalloc pointer", d, cudaMemoryTypeDevice);

  long long *mapped, *mapped_dev;
  CHECK(cudaHostAlloc(&mapped, n * sizeof(long long),
                      cudaHostAllocMapped | cudaHostAllocPortable));
  CHECK(cudaHostGetDevicePointer((void **)&mapped_dev, mapped, 0));
  unsigned flags = 0;
  CHECK(cudaHostGetFlags(&flags, mapped));
  require((flags & cudaHostAllocMapped) != 0, "cudaHostGetFlags has cudaHostAllocMapped");
  fill_index_squares<<<(n + 127) / 128, 128>>>(mapped_dev, n);
  CHECK(cudaDeviceSynchronize());
  expect_squares("kernel writes mapped cudaHostAlloc memory", mapped, n);

  long long *combined;
  CHECK(cudaHostAlloc(&combined, n * sizeof(long long), cudaHostAllocWriteCombined));
  for (int i = 0; i < n; ++i) combined[i] = (long long)i * i;
  CHECK(cudaMemcpy(d, combined, n * sizeof(long long), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(pinned, d, n * sizeof(long long), cudaMemcpyDeviceToHost));
  expect_squares("write-combined source", pinned, n);

  // Ordinary memory, page-aligned as some drivers prefer, registered and mapped.
  long long *plain = static_cast<long long *>(aligned_alloc(4096, 81920));
  CHECK(cudaHostRegister(plain, 81920, cudaHostRegisterMapped));
  long long *plain_dev;
  CHECK(cudaHostGetDevicePointer((void **)&plain_dev, plain, 0));
  fill_index_squares<<<(n + 127) / 128, 128>>>(plain_dev, n);
  CHECK(cudaDeviceSynchronize());
  expect_squares("kernel writes cudaHostRegister memory", plain, n);
  check_type("registered pointer", plain, cudaMemoryTypeHost);
  expect_error("cudaHostRegister twice", cudaHostRegister(plain, 81920, 0),
               cudaErrorHostMemoryAlreadyRegistered);
  cudaGetLastError();
  CHECK(cudaHostUnregister(plain));
  check_type("unregistered pointer", plain, cudaMemoryTypeUnregistered);
  free(plain);

  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFreeHost(mapped));
  CHECK(cudaFreeHost(combined));
  CHECK(cudaFree(d));
  return finish();
}
