// __constant__ and __device__ variables: cudaMemcpyToSymbol, cudaMemcpyFromSymbol,
// cudaGetSymbolAddress, and a kernel reading and writing them.
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>

__constant__ float coefficients[4];
__device__ int counter = 5;

__global__ void polynomial(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = coefficients[0] + v * (coefficients[1] + v * (coefficients[2] + v * coefficients[3]));
        atomicAdd(&counter, 1);
    }
}

int main() {
    const int n = 100;
    float hx[n], hy[n], c[4] = {1, 2, 3, 4};
    for (int i = 0; i < n; i++) hx[i] = i * 0.01f;
    float *x, *y;
    cudaMalloc(&x, sizeof hx);
    cudaMalloc(&y, sizeof hy);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    printf("to symbol: %s\n", cudaGetErrorName(cudaMemcpyToSymbol(coefficients, c, sizeof c)));
    polynomial<<<1, 128>>>(x, y, n);
    cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        float v = hx[i];
        wrong += fabsf(hy[i] - (1 + v * (2 + v * (3 + v * 4)))) > 1e-5f;  // fma or not
    }
    int count = 0;
    printf("from symbol: %s\n", cudaGetErrorName(cudaMemcpyFromSymbol(&count, counter, sizeof count)));
    int *address = nullptr;
    cudaError_t e = cudaGetSymbolAddress((void **)&address, counter);
    printf("address: %s %d\n", cudaGetErrorName(e), address != nullptr);
    printf("counter: %d wrong: %d\n", count, wrong);
    return 0;
}
