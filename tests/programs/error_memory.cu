// Memory errors that are not sticky: an allocation larger than any device (4 PiB), device and
// page-locked; freeing a pointer the runtime never gave out; a copy with an invalid
// direction. cudaFree(nullptr) is fine, and allocation works again afterwards.
#include "common.h"

int main() {
  const size_t huge = (size_t)1 << 52;
  void *p = nullptr;
  expect_error("cudaMalloc(4 PiB)", cudaMalloc(&p, huge), cudaErrorMemoryAllocation);
  expect_error("cudaGetLastError after it", cudaGetLastError(), cudaErrorMemoryAllocation);
  expect_error("cudaGetLastError again", cudaGetLastError(), cudaSuccess);
  expect_error("cudaMallocHost(4 PiB)", cudaMallocHost(&p, huge), cudaErrorMemoryAllocation);
  expect_error("cudaMallocManaged(4 PiB)", cudaMallocManaged(&p, huge),
               cudaErrorMemoryAllocation);
  cudaGetLastError();
  expect_error("cudaFree(nullptr)", cudaFree(nullptr), cudaSuccess);

  int stack_value = 0;
  expect_error("cudaFree(stack address)", cudaFree(&stack_value), cudaErrorInvalidValue);
  cudaGetLastError();
  int *d;
  CHECK(cudaMalloc(&d, 1024));
  expect_error("cudaMemcpy with kind 77",
               cudaMemcpy(d, &stack_value, sizeof stack_value, (cudaMemcpyKind)77),
               cudaErrorInvalidMemcpyDirection);
  cudaGetLastError();
  CHECK(cudaMemset(d, 0x01, 1024));
  int back = 0;
  CHECK(cudaMemcpy(&back, d + 10, sizeof back, cudaMemcpyDeviceToHost));
  printf("memory works afterwards: %#x\n", back);
  CHECK(cudaFree(d));
  return finish();
}
