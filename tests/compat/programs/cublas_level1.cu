// cuBLAS handles, modes and Level 1 against host references: axpy, dot, nrm2 and scal with
// strides (negative ones too), results in host and in device memory (device pointer mode,
// alpha read from device memory), an unimplemented function, and status names.
#include <cmath>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>

// Not implemented by ptxport (declared as cublas_api.h does): it must say so and go on.
extern "C" cublasStatus_t cublasSswap_v2(cublasHandle_t, int, float *, int, float *, int);

static bool close(double got, double want) { return fabs(got - want) <= 1e-5 * (1 + fabs(want)); }

int main() {
    cublasHandle_t h;
    cublasCreate(&h);
    int version = 0;
    cublasGetVersion(h, &version);
    printf("version: %s %d\n", cublasGetStatusName(CUBLAS_STATUS_SUCCESS), version >= 130000);
    cublasMath_t math;
    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    cublasGetMathMode(h, &math);
    cublasPointerMode_t mode;
    cublasGetPointerMode(h, &mode);
    printf("modes: %d %d\n", (int)math, (int)mode);

    const int n = 100;
    std::vector<float> x(2 * n), y(3 * n);
    for (int i = 0; i < 2 * n; i++) x[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 3 * n; i++) y[i] = 0.5f * (float)(i % 5);
    float *dx, *dy, *dscalars;
    cudaMalloc(&dx, x.size() * 4); cudaMalloc(&dy, y.size() * 4); cudaMalloc(&dscalars, 16);
    cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y.data(), y.size() * 4, cudaMemcpyHostToDevice);

    // dot with incx = 2 and incy = -3: element i of y is y[(n-1-i)*3]
    double want = 0;
    for (int i = 0; i < n; i++) want += (double)x[2 * i] * y[(n - 1 - i) * 3];
    float dot = 0;
    cublasStatus_t s = cublasSdot(h, n, dx, 2, dy, -3, &dot);
    printf("dot: %s %s\n", cublasGetStatusName(s), close(dot, want) ? "PASS" : "FAIL");

    double sq = 0;
    for (int i = 0; i < n; i++) sq += (double)x[2 * i] * x[2 * i];
    float norm = 0;
    cublasSnrm2(h, n, dx, 2, &norm);
    printf("nrm2: %s\n", close(norm, sqrt(sq)) ? "PASS" : "FAIL");

    // axpy: y[3i] += 2.5 x[i] for i < n (incx 1, incy 3)
    float alpha = 2.5f;
    std::vector<float> want_y = y;
    for (int i = 0; i < n; i++) want_y[3 * i] += alpha * x[i];
    cublasSaxpy(h, n, &alpha, dx, 1, dy, 3);
    std::vector<float> got_y(y.size());
    cudaMemcpy(got_y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (size_t i = 0; i < y.size(); i++) wrong += !close(got_y[i], want_y[i]);
    printf("axpy: wrong %d\n", wrong);

    // device pointer mode: alpha from device memory, the dot's result to device memory
    float scale = -2.0f;
    cudaMemcpy(dscalars, &scale, 4, cudaMemcpyHostToDevice);
    cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE);
    cublasGetPointerMode(h, &mode);
    cublasSscal(h, n, dscalars, dx, 2);
    cublasSdot(h, n, dx, 2, dx, 2, dscalars + 1);
    float results[2];
    cudaMemcpy(results, dscalars, 8, cudaMemcpyDeviceToHost);
    printf("device mode %d: scal+dot %s\n", (int)mode,
           close(results[1], 4.0 * sq) ? "PASS" : "FAIL");
    cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST);

    float one = 1;
    s = cublasSswap_v2(h, 2, dx, 1, dy, 1);
    printf("swap: %s\n", cublasGetStatusName(s));
    s = cublasSswap_v2(h, 2, dx, 1, dy, 1);
    printf("swap again: %s\n", cublasGetStatusName(s));
    printf("string: %s\n", cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE));
    printf("bad mode: %s\n", cublasGetStatusName(cublasSetPointerMode(h, (cublasPointerMode_t)7)));
    cudaFree(dx); cudaFree(dy); cudaFree(dscalars);
    printf("destroy: %s\n", cublasGetStatusName(cublasDestroy(h)));
    return 0;
}
