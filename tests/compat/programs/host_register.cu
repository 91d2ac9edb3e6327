// cudaHostRegister: a kernel writes plain host memory through its device pointer; registering
// it twice, and unregistering memory never registered, fail as in CUDA.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void square(int *x, int n) {
    int i = threadIdx.x;
    if (i < n) x[i] = i * i;
}

int main() {
    const int n = 64;
    int *host = (int *)calloc(n, sizeof(int)), *device = nullptr;
    cudaError_t e = cudaHostRegister(host, n * sizeof(int), cudaHostRegisterMapped);
    printf("register: %s\n", cudaGetErrorName(e));
    e = cudaHostRegister(host, n * sizeof(int), cudaHostRegisterMapped);
    printf("again: %s\n", cudaGetErrorName(e));
    e = cudaHostGetDevicePointer((void **)&device, host, 0);
    printf("device pointer: %s %d\n", cudaGetErrorName(e), device == host);
    square<<<1, n>>>(device, n);
    e = cudaDeviceSynchronize();
    printf("kernel: %s %d %d\n", cudaGetErrorName(e), host[3], host[63]);
    printf("unregister: %s\n", cudaGetErrorName(cudaHostUnregister(host)));
    printf("unregister again: %s\n", cudaGetErrorName(cudaHostUnregister(host)));
    free(host);
    return 0;
}
