// A kernel that writes far past its buffer: cudaDeviceSynchronize returns
// cudaErrorIllegalAddress, and the error is sticky (later calls return it too), as in CUDA.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void wild(int *p) { p[threadIdx.x + (1 << 24)] = 1; }

int main() {
    int *d;
    cudaMalloc(&d, 64 * sizeof(int));
    wild<<<1, 32>>>(d);
    printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("sync: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int h = 0;
    printf("memcpy after: %s\n", cudaGetErrorName(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost)));
    return 0;
}
