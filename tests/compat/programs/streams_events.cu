// saxpy on two streams with cudaMemcpyAsync, timed with events; the stream and event queries.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void saxpy(float a, const float *x, float *y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

int main() {
    const int n = 1 << 16;
    float *hx, *hy;
    cudaMallocHost(&hx, 2 * n * sizeof(float));
    cudaMallocHost(&hy, 2 * n * sizeof(float));
    for (int i = 0; i < 2 * n; i++) { hx[i] = i % 7; hy[i] = 1.0f; }
    float *dx, *dy;
    cudaMalloc(&dx, 2 * n * sizeof(float));
    cudaMalloc(&dy, 2 * n * sizeof(float));
    cudaStream_t s[2];
    cudaEvent_t start, stop;
    cudaStreamCreate(&s[0]);
    cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, s[0]);
    for (int k = 0; k < 2; k++) {
        size_t off = k * n;
        cudaMemcpyAsync(dx + off, hx + off, n * sizeof(float), cudaMemcpyHostToDevice, s[k]);
        cudaMemcpyAsync(dy + off, hy + off, n * sizeof(float), cudaMemcpyHostToDevice, s[k]);
        saxpy<<<64, 128, 0, s[k]>>>(2.0f + k, dx + off, dy + off, n);
        cudaMemcpyAsync(hy + off, dy + off, n * sizeof(float), cudaMemcpyDeviceToHost, s[k]);
    }
    cudaStreamSynchronize(s[1]);
    cudaEventRecord(stop, s[0]);
    printf("event sync: %s\n", cudaGetErrorName(cudaEventSynchronize(stop)));
    float ms = -1;
    cudaError_t e = cudaEventElapsedTime(&ms, start, stop);
    printf("elapsed: %s %s\n", cudaGetErrorName(e), ms >= 0 ? "non-negative" : "negative");
    printf("stream query: %s\n", cudaGetErrorName(cudaStreamQuery(s[0])));
    printf("event query: %s\n", cudaGetErrorName(cudaEventQuery(stop)));
    int wrong = 0;
    for (int i = 0; i < 2 * n; i++)
        wrong += hy[i] != (2.0f + i / n) * (i % 7) + 1.0f;
    printf("wrong: %d\n", wrong);
    cudaEventDestroy(start); cudaEventDestroy(stop);
    cudaStreamDestroy(s[0]); cudaStreamDestroy(s[1]);
    cudaFree(dx); cudaFree(dy); cudaFreeHost(hx); cudaFreeHost(hy);
    return wrong != 0;
}
