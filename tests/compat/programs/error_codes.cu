// Errors a program can provoke without a fault: a block too large, a huge allocation, a
// freed pointer freed again; each returns CUDA's code and the program goes on.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void nothing() {}

int main() {
    nothing<<<1, 2048>>>();
    printf("block 2048: %s\n", cudaGetErrorName(cudaGetLastError()));
    nothing<<<1, dim3(1, 1, 128)>>>();
    printf("block z 128: %s\n", cudaGetErrorName(cudaGetLastError()));
    void *p = nullptr;
    printf("huge malloc: %s\n", cudaGetErrorName(cudaMalloc(&p, size_t(1) << 60)));
    printf("then: %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaMalloc(&p, 16);
    cudaFree(p);
    printf("double free: %s\n", cudaGetErrorName(cudaFree(p)));
    nothing<<<1, 1>>>();
    printf("good launch: %s %s\n", cudaGetErrorName(cudaGetLastError()),
           cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
