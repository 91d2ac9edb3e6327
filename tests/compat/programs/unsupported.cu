// A call ptxport does not implement (CUDA IPC) fails with cudaErrorNotSupported, and the
// program goes on: a kernel still runs afterwards.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(int *out, int value) { out[threadIdx.x] = value; }

int main() {
    int *d, h[32];
    cudaMalloc(&d, sizeof h);
    cudaIpcMemHandle_t handle;
    cudaError_t e = cudaIpcGetMemHandle(&handle, d);
    printf("ipc: %s\n", cudaGetErrorName(e));
    fill<<<1, 32>>>(d, 7);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("after: %d %d\n", h[0], h[31]);
    return 0;
}
