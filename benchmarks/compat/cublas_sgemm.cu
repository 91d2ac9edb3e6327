// cublasSgemm through ptxport's libcublas: for each size n given, the median time of an
// n x n x n SGEMM (C = A B, and C = A B + C), each call followed by cudaDeviceSynchronize.
// Prints "n beta milliseconds" lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>

static double median_ms(cublasHandle_t h, int n, float beta, float *a, float *b, float *c,
                        int repeats) {
    const float alpha = 1;
    std::vector<double> times;
    for (int r = 0; r < repeats + 1; r++) {   // the first call warms up
        auto start = std::chrono::steady_clock::now();
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n);
        cudaDeviceSynchronize();
        auto end = std::chrono::steady_clock::now();
        if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

int main(int argc, char **argv) {
    int repeats = argc > 1 ? atoi(argv[1]) : 7;
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    for (int i = 2; i < argc; i++) {
        int n = atoi(argv[i]);
        std::vector<float> host((size_t)n * n);
        for (size_t j = 0; j < host.size(); j++) host[j] = (float)(j % 13) / 13.0f;
        float *a, *b, *c;
        cudaMalloc(&a, host.size() * 4); cudaMalloc(&b, host.size() * 4);
        cudaMalloc(&c, host.size() * 4);
        cudaMemcpy(a, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(b, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(c, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
        for (float beta : {0.0f, 1.0f})
            printf("%d %g %.4f\n", n, beta, median_ms(h, n, beta, a, b, c, repeats));
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    cublasDestroy(h);
    return 0;
}
