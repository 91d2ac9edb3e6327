// Reads pinned memory a slow kernel writes, right after the launch returns: 1 when launches
// block (CUDA_LAUNCH_BLOCKING=1), usually 0 otherwise (the kernel is still running).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void slow_then_flag(int *flag, int rounds) {
    int v = threadIdx.x;
    for (int i = 0; i < rounds; i++) v = v * 1664525 + 1013904223;
    if (threadIdx.x == 0 && blockIdx.x == 0) *flag = 1 + (v == 42);
}

int main() {
    int *flag;
    cudaMallocHost(&flag, sizeof(int));
    *flag = 0;
    slow_then_flag<<<64, 256>>>(flag, 50000);
    printf("flag at return: %d\n", *(volatile int *)flag);
    cudaDeviceSynchronize();
    printf("flag after sync: %d\n", *flag);
    return 0;
}
