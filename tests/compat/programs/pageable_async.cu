// cudaMemcpyAsync with pageable host memory behind a busy stream: a host buffer may be
// reused as soon as an upload returns (CUDA stages it), and a download to pageable memory
// has completed when it returns.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void busy(int *sink, int rounds) {
    int v = 0;
    for (int i = 0; i < rounds; i++) v = v * 1664525 + 1013904223;
    if (v == 42) *sink = v;
}

int main() {
    int *d, *sink;
    cudaMalloc(&d, sizeof(int));
    cudaMalloc(&sink, sizeof(int));
    cudaStream_t s;
    cudaStreamCreate(&s);
    int h = 1;
    busy<<<64, 256, 0, s>>>(sink, 20000);
    cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, s);
    h = 2;  // CUDA copied the 1 already
    int back = 0;
    busy<<<64, 256, 0, s>>>(sink, 20000);
    cudaMemcpyAsync(&back, d, sizeof back, cudaMemcpyDeviceToHost, s);
    printf("read at once: %d\n", back);
    cudaStreamSynchronize(s);
    printf("after sync: %d\n", back);
    return 0;
}
