// The device heap: malloc and free, new and delete inside kernels (each thread builds a small
// linked list, sums it and frees it), a block's shared pointer to one allocation, and the
// heap size set with cudaDeviceSetLimit(cudaLimitMallocHeapSize) before the first launch.
#include <vector>

#include "common.h"

struct Node {
  int value;
  Node *next;
};

__global__ void list_sums(int *sums, int length) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Node *head = nullptr;
  for (int k = 0; k < length; ++k) head = new Node{i + k, head};
  int sum = 0;
  while (head) {
    Node *next = head->next;
    sum += head->value;
    delete head;
    head = next;
  }
  sums[i] = sum;
}

__global__ void block_buffer(int *out) {
  __shared__ int *buffer;
  if (threadIdx.x == 0) buffer = static_cast<int *>(malloc(blockDim.x * sizeof(int)));
  __syncthreads();
  if (buffer == nullptr) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = -1;
    return;
  }
  buffer[threadIdx.x] = threadIdx.x * 3;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) free(buffer);
}

int main() {
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 20));
  size_t heap = 0;
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  printf("heap limit >= 64 MiB: %s\n", heap >= (64u << 20) ? "yes" : "no");
  const int threads = 4096, length = 20;
  int *sums;
  CHECK(cudaMallocManaged(&sums, threads * sizeof(int)));
  list_sums<<<threads / 128, 128>>>(sums, length);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want(threads);
  for (int i = 0; i < threads; ++i) want[i] = length * i + length * (length - 1) / 2;
  expect_equal("linked lists built with new, freed with delete", sums, want.data(), threads);

  int *out;
  CHECK(cudaMallocManaged(&out, 8 * 256 * sizeof(int)));
  block_buffer<<<8, 256>>>(out);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want_out(8 * 256);
  for (int i = 0; i < 8 * 256; ++i) want_out[i] = (255 - i % 256) * 3;
  expect_equal("one malloc per block, shared through shared memory", out, want_out.data(),
               want_out.size());
  CHECK(cudaFree(sums));
  CHECK(cudaFree(out));
  return finish();
}
