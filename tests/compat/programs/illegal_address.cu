// A kernel that writes far past its buffer: cudaDeviceSynchronize returns
// cudaErrorIllegalAddress, and the error is sticky (later calls return it too) until
// cudaDeviceReset, as in CUDA.
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
    printf("reset: %s\n", cudaGetErrorName(cudaDeviceReset()));
    printf("malloc after reset: %s\n", cudaGetErrorName(cudaMalloc(&d, 4)));
    printf("memcpy after reset: %s\n", cudaGetErrorName(cudaMemcpy(d, &h, 4, cudaMemcpyHostToDevice)));
    return 0;
}
