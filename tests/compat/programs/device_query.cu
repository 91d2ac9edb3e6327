// cudaGetDeviceCount and cudaGetDeviceProperties: what a program learns of the device.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    printf("count: %d (%s)\n", count, cudaGetErrorName(e));
    cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, 0);
    printf("properties: %s\n", cudaGetErrorName(e));
    printf("name: %s\n", p.name);
    printf("compute capability: %d.%d\n", p.major, p.minor);
    printf("warp size: %d\n", p.warpSize);
    printf("max threads per block: %d\n", p.maxThreadsPerBlock);
    printf("max block: %d %d %d\n", p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]);
    printf("shared per block: %zu\n", p.sharedMemPerBlock);
    printf("unified addressing: %d\n", p.unifiedAddressing);
    printf("multiprocessors positive: %d\n", p.multiProcessorCount > 0);
    int device = -1;
    cudaGetDevice(&device);
    printf("current device: %d\n", device);
    e = cudaSetDevice(3);
    printf("set device 3: %s\n", cudaGetErrorName(e));
    return 0;
}
