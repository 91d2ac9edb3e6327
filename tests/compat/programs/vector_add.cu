// Vector add with the runtime API's basics: cudaMalloc, cudaMemcpy, <<<>>>, cudaGetLastError,
// cudaDeviceSynchronize, cudaFree. Prints "ok" lines the test checks.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 5000;
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) { a[i] = 0.5f * i; b[i] = 3.0f - i; }
    float *da, *db, *dc;
    if (cudaMalloc(&da, sizeof a) || cudaMalloc(&db, sizeof b) || cudaMalloc(&dc, sizeof c)) {
        printf("cudaMalloc failed\n");
        return 1;
    }
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
    vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    printf("launch: %s\n", cudaGetErrorString(cudaGetLastError()));
    printf("sync: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += c[i] != a[i] + b[i];
    printf("c[0]=%g c[4999]=%g wrong=%d\n", c[0], c[n - 1], wrong);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return wrong != 0;
}
