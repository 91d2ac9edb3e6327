// cublasSgemm / cublasDgemm through ptxport's libcublas (benchmarks/gemm.py): for each size n
// given, the median time of an n x n x n GEMM C = A B, each call followed by
// cudaDeviceSynchronize. Arguments: repeats, "s" or "d", sizes. Prints "n milliseconds" lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>

static cublasStatus_t gemm(cublasHandle_t h, int n, const float *a, const float *b, float *c) {
    const float one = 1, zero = 0;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
}
static cublasStatus_t gemm(cublasHandle_t h, int n, const double *a, const double *b, double *c) {
    const double one = 1, zero = 0;
    return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
}

template <typename T> static double median_ms(cublasHandle_t h, int n, int repeats) {
    std::vector<T> host((size_t)n * n);
    for (size_t j = 0; j < host.size(); j++) host[j] = (T)(j % 13) / 13;
    T *a, *b, *c;
    cudaMalloc(&a, host.size() * sizeof(T)); cudaMalloc(&b, host.size() * sizeof(T));
    cudaMalloc(&c, host.size() * sizeof(T));
    cudaMemcpy(a, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemcpy(b, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    std::vector<double> times;
    for (int r = 0; r < repeats + 1; r++) {   // the first call warms up
        auto start = std::chrono::steady_clock::now();
        if (gemm(h, n, a, b, c) != CUBLAS_STATUS_SUCCESS) exit(2);
        cudaDeviceSynchronize();
        auto end = std::chrono::steady_clock::now();
        if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    cudaFree(a); cudaFree(b); cudaFree(c);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    int repeats = atoi(argv[1]);
    bool single = strcmp(argv[2], "s") == 0;
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    for (int i = 3; i < argc; i++) {
        int n = atoi(argv[i]);
        printf("%d %.4f\n", n, single ? median_ms<float>(h, n, repeats) : median_ms<double>(h, n, repeats));
        fflush(stdout);
    }
    cublasDestroy(h);
    return 0;
}
