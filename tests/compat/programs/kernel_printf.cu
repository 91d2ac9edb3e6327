// Device printf between host output: the lines come out in program order, as with CUDA
// (device output appears at the synchronisation that follows the launch).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void hello(int n) {
    if (threadIdx.x < n) printf("thread %d of %d\n", threadIdx.x, blockDim.x);
}

int main() {
    printf("before\n");
    hello<<<1, 4>>>(2);
    cudaDeviceSynchronize();
    printf("after\n");
    return 0;
}
