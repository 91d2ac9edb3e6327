// A CUDA graph made by stream capture (a memset, two launches, a copy back), instantiated
// once and launched three times.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void add(int *x, int n, int by) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += by;
}

int main() {
    const int n = 300;
    int *d, *total, h[n];
    cudaMalloc(&d, n * sizeof(int));
    cudaMallocHost(&total, n * sizeof(int));
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemset(d, 0, n * sizeof(int));
    cudaStreamCaptureStatus status;
    printf("begin: %s\n", cudaGetErrorName(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal)));
    cudaStreamIsCapturing(s, &status);
    printf("capturing: %d\n", status == cudaStreamCaptureStatusActive);
    add<<<3, 128, 0, s>>>(d, n, 1);
    add<<<3, 128, 0, s>>>(d, n, 10);
    cudaMemcpyAsync(total, d, n * sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaGraph_t graph;
    printf("end: %s\n", cudaGetErrorName(cudaStreamEndCapture(s, &graph)));
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("nothing ran during capture: %d\n", h[0]);
    cudaGraphExec_t exec;
    printf("instantiate: %s\n", cudaGetErrorName(cudaGraphInstantiate(&exec, graph, 0)));
    for (int k = 0; k < 3; k++) cudaGraphLaunch(exec, s);
    cudaError_t e = cudaStreamSynchronize(s);
    printf("after 3 launches: %s %d %d\n", cudaGetErrorName(e), total[0], total[n - 1]);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return 0;
}
