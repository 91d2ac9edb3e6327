// Grid synchronisation through CUDA's device runtime (cudaCGGetIntrinsicHandle,
// cudaCGSynchronize, cudaCGSynchronizeGrid; built with -rdc=true -lcudadevrt), as numba-cuda
// and older cooperative groups call it: block 0 arrives last, and every block must see all
// blocks arrived after the sync. Then the same kernel in a plain launch, which must fail.
// (Not named cudadevrt*: nvlink leaves a unit of that name out of the device link.)
#include <cstdio>
#include <cuda_runtime.h>

__global__ void arrive_then_count(int *arrived, int *seen, int *rc, int grid_variant) {
  unsigned long long grid = cudaCGGetIntrinsicHandle(cudaCGScopeGrid);
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) {
      for (volatile int spin = 0; spin < 2000000; spin = spin + 1) {}
    }
    atomicAdd(arrived, 1);
  }
  cudaError_t e = grid_variant ? cudaCGSynchronizeGrid(grid, 0) : cudaCGSynchronize(grid, 0);
  seen[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(arrived, 0);
  rc[blockIdx.x * blockDim.x + threadIdx.x] = (int)e;
}

int main() {
  // two blocks, or one where no more run at once (a cooperative launch needs them resident)
  const int threads = 64;
  int per_sm = 0, sms = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, arrive_then_count, threads, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = per_sm * sms >= 2 ? 2 : 1;
  int *arrived, *seen, *rc;
  cudaMallocManaged(&arrived, sizeof(int));
  cudaMallocManaged(&seen, blocks * threads * sizeof(int));
  cudaMallocManaged(&rc, blocks * threads * sizeof(int));
  for (int variant = 0; variant < 2; ++variant) {
    *arrived = 0;
    void *args[] = {&arrived, &seen, &rc, &variant};
    cudaError_t e = cudaLaunchCooperativeKernel((void *)arrive_then_count, blocks, threads,
                                                args, 0, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    int waited = 1, ok = 1;
    for (int i = 0; e == cudaSuccess && i < blocks * threads; ++i) {
      waited &= seen[i] == blocks;
      ok &= rc[i] == 0;
    }
    printf("%s cooperative: %s, every thread saw every block arrive: %s, returned 0: %s\n",
           variant ? "cudaCGSynchronizeGrid" : "cudaCGSynchronize", cudaGetErrorName(e),
           waited ? "yes" : "no", ok ? "yes" : "no");
  }
  int variant = 0;
  void *args[] = {&arrived, &seen, &rc, &variant};
  cudaError_t e = cudaLaunchKernel((void *)arrive_then_count, blocks, threads, args, 0, 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  printf("plain launch: %s\n", e == cudaSuccess ? "succeeded" : "failed");
  return 0;
}
