// A call ptxport does not implement (CUDA graphs) fails with cudaErrorNotSupported, and the
// program goes on: a kernel still runs afterwards.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(int *out, int value) { out[threadIdx.x] = value; }

int main() {
    cudaGraph_t graph;
    cudaError_t e = cudaGraphCreate(&graph, 0);
    printf("graph: %s\n", cudaGetErrorName(e));
    int *d, h[32];
    cudaMalloc(&d, sizeof h);
    fill<<<1, 32>>>(d, 7);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("after: %d %d\n", h[0], h[31]);
    return 0;
}
