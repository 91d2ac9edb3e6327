// Templates (mangled kernel names) and a second translation unit (two_units_other.cu):
// each unit's fat binary is registered on its own.
#include <cstdio>
#include <cuda_runtime.h>
template <typename T> __global__ void scale(T *x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
void run_b(int *d, int n);
int main() {
    float hf[4] = {1, 2, 3, 4}; double hd[4] = {1, 2, 3, 4}; int hi[4] = {1, 2, 3, 4};
    float *f; double *d; int *i;
    cudaMalloc(&f, 16); cudaMalloc(&d, 32); cudaMalloc(&i, 16);
    cudaMemcpy(f, hf, 16, cudaMemcpyHostToDevice); cudaMemcpy(d, hd, 32, cudaMemcpyHostToDevice);
    cudaMemcpy(i, hi, 16, cudaMemcpyHostToDevice);
    scale<<<1, 4>>>(f, 2.5f, 4); scale<<<1, 4>>>(d, 0.5, 4); run_b(i, 4);
    cudaMemcpy(hf, f, 16, cudaMemcpyDeviceToHost); cudaMemcpy(hd, d, 32, cudaMemcpyDeviceToHost);
    cudaMemcpy(hi, i, 16, cudaMemcpyDeviceToHost);
    printf("%g %g %d %s\n", hf[3], hd[3], hi[3], cudaGetErrorName(cudaGetLastError()));
}
