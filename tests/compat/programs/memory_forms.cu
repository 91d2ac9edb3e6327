// Pitched memory and 2D copies and memsets, cudaMemcpyDefault, peer copies, stream-ordered
// allocation, a host function on a stream, and parameter queries through the driver API.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void add_rows(float *m, size_t pitch, int width, int height) {
    int x = threadIdx.x, y = blockIdx.x;
    if (x < width && y < height) {
        float *row = (float *)((char *)m + y * pitch);
        row[x] += y;
    }
}

static void CUDART_CB note(void *data) { *(int *)data = 42; }

int main() {
    const int w = 37, h = 5;
    float host[h][w], back[h][w];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) host[y][x] = x;
    float *m;
    size_t pitch = 0;
    cudaError_t e = cudaMallocPitch(&m, &pitch, w * 4, h);
    printf("pitch alloc: %s %d\n", cudaGetErrorName(e), pitch >= w * 4 && pitch % 256 == 0);
    cudaMemset2D(m, pitch, 0, w * 4, h);
    cudaMemcpy2D(m, pitch, host, w * 4, w * 4, h, cudaMemcpyHostToDevice);
    add_rows<<<h, 64>>>(m, pitch, w, h);
    cudaMemcpy2D(back, w * 4, m, pitch, w * 4, h, cudaMemcpyDefault);
    int wrong = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) wrong += back[y][x] != x + y;
    printf("2d wrong: %d\n", wrong);

    cudaStream_t s;
    cudaStreamCreate(&s);
    int *a, *b, value = 7, result = 0, flag = 0;
    cudaMallocAsync(&a, 4, s);
    cudaMallocAsync(&b, 4, s);
    cudaMemcpyAsync(a, &value, 4, cudaMemcpyDefault, s);
    cudaMemcpyPeerAsync(b, 0, a, 0, 4, s);
    cudaMemcpyAsync(&result, b, 4, cudaMemcpyDeviceToHost, s);
    cudaLaunchHostFunc(s, note, &flag);
    cudaFreeAsync(a, s);
    cudaFreeAsync(b, s);
    e = cudaStreamSynchronize(s);
    printf("stream: %s result %d flag %d\n", cudaGetErrorName(e), result, flag);
    cudaFuncAttributes attributes;
    e = cudaFuncGetAttributes(&attributes, add_rows);
    printf("attributes: %s max threads %d\n", cudaGetErrorName(e),
           attributes.maxThreadsPerBlock);
    return wrong != 0;
}
