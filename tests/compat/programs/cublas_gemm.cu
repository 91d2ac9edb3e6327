// cuBLAS GEMMs against a host reference in double: every transpose combination with leading
// dimensions larger than the matrices, alpha/beta, beta = 0 over NaN, strided batches (one
// broadcast with stride 0), GemmEx with FP32 and FP16 data, a bad lda, and work ordered on a
// stream. Prints one line per case.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

static const char *op_name(cublasOperation_t op) {
    return op == CUBLAS_OP_N ? "N" : op == CUBLAS_OP_T ? "T" : "C";
}

// element (i, j) of op(X), X column-major with leading dimension ld
static double at(const std::vector<float> &x, cublasOperation_t op, int ld, int i, int j) {
    return op == CUBLAS_OP_N ? x[i + (size_t)j * ld] : x[j + (size_t)i * ld];
}

struct Case {
    int m, n, k, lda, ldb, ldc;
    cublasOperation_t ta, tb;
};

// C = alpha op(A) op(B) + beta C on the host, in double; padding rows of C stay as they are.
static void reference(const Case &c, float alpha, const std::vector<float> &a,
                      const std::vector<float> &b, float beta, std::vector<double> &out) {
    for (int j = 0; j < c.n; j++)
        for (int i = 0; i < c.m; i++) {
            double sum = 0;
            for (int p = 0; p < c.k; p++)
                sum += at(a, c.ta, c.lda, i, p) * at(b, c.tb, c.ldb, p, j);
            double old = out[i + (size_t)j * c.ldc];
            out[i + (size_t)j * c.ldc] = alpha * sum + (beta == 0 ? 0 : beta * old);
        }
}

static std::vector<float> random_values(size_t count, unsigned seed) {
    std::vector<float> v(count);
    srand(seed);
    for (auto &x : v) x = (float)rand() / RAND_MAX * 2 - 1;
    return v;
}

static float *upload(const std::vector<float> &v) {
    float *d;
    cudaMalloc(&d, v.size() * sizeof(float));
    cudaMemcpy(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
    return d;
}

// Largest |got - want| relative to the size of the terms (k * max|a| * max|b| ~ k here).
static double error(const std::vector<float> &got, const std::vector<double> &want, int k) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double e = std::isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]) / (k + 1);
        worst = e > worst ? e : worst;
    }
    return worst;
}

static bool gemm_case(cublasHandle_t h, const Case &c, float alpha, float beta, bool nan_c) {
    int a_cols = c.ta == CUBLAS_OP_N ? c.k : c.m, b_cols = c.tb == CUBLAS_OP_N ? c.n : c.k;
    auto a = random_values((size_t)c.lda * a_cols, 1), b = random_values((size_t)c.ldb * b_cols, 2);
    auto cc = random_values((size_t)c.ldc * c.n, 3);
    if (nan_c)
        for (auto &x : cc) x = NAN;
    std::vector<double> want(cc.begin(), cc.end());
    reference(c, alpha, a, b, beta, want);
    float *da = upload(a), *db = upload(b), *dc = upload(cc);
    cublasStatus_t s = cublasSgemm(h, c.ta, c.tb, c.m, c.n, c.k, &alpha, da, c.lda, db, c.ldb,
                                   &beta, dc, c.ldc);
    std::vector<float> got(cc.size());
    cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    // padding rows (i >= m) must be untouched: NaN stays NaN there
    bool padding_kept = true;
    for (int j = 0; j < c.n; j++)
        for (int i = c.m; i < c.ldc; i++) {
            float g = got[i + (size_t)j * c.ldc], w = (float)want[i + (size_t)j * c.ldc];
            if (!(g == w || (std::isnan(g) && std::isnan(w)))) padding_kept = false;
            got[i + (size_t)j * c.ldc] = 0; want[i + (size_t)j * c.ldc] = 0;
        }
    return s == CUBLAS_STATUS_SUCCESS && padding_kept && error(got, want, c.k) < 1e-6;
}

static bool strided_batched(cublasHandle_t h) {
    const int m = 13, n = 9, k = 7, batch = 3, lda = 16, ldb = 8, ldc = 15;
    const long long sa = 0, sb = (long long)ldb * n + 5, sc = (long long)ldc * n + 2;
    auto a = random_values((size_t)lda * k, 4);                 // one A for every batch
    auto b = random_values((size_t)sb * batch, 5), c = random_values((size_t)sc * batch, 6);
    std::vector<double> want(c.begin(), c.end());
    float alpha = 0.75f, beta = 2.0f;
    const Case one = {m, n, k, lda, ldb, ldc, CUBLAS_OP_N, CUBLAS_OP_N};
    for (int i = 0; i < batch; i++) {
        std::vector<float> bi(b.begin() + i * sb, b.begin() + i * sb + (size_t)ldb * n);
        std::vector<double> ci(want.begin() + i * sc, want.begin() + i * sc + (size_t)ldc * n);
        reference(one, alpha, a, bi, beta, ci);
        std::copy(ci.begin(), ci.end(), want.begin() + i * sc);
    }
    float *da = upload(a), *db = upload(b), *dc = upload(c);
    cublasStatus_t s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                                                 da, lda, sa, db, ldb, sb, &beta, dc, ldc, sc,
                                                 batch);
    std::vector<float> got(c.size());
    cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return s == CUBLAS_STATUS_SUCCESS && error(got, want, k) < 1e-6;
}

static bool gemm_ex_half(cublasHandle_t h) {
    const int m = 8, n = 5, k = 6;
    auto a = random_values(m * k, 7), b = random_values(k * n, 8);
    std::vector<__half> ah(a.size()), bh(b.size());
    for (size_t i = 0; i < a.size(); i++) { ah[i] = __float2half(a[i]); a[i] = __half2float(ah[i]); }
    for (size_t i = 0; i < b.size(); i++) { bh[i] = __float2half(b[i]); b[i] = __half2float(bh[i]); }
    std::vector<double> want(m * n, 0);
    Case c = {m, n, k, m, k, m, CUBLAS_OP_N, CUBLAS_OP_N};
    float alpha = 1, beta = 0;
    reference(c, alpha, a, b, beta, want);
    __half *da, *db;
    float *dc;
    cudaMalloc(&da, ah.size() * 2); cudaMalloc(&db, bh.size() * 2); cudaMalloc(&dc, m * n * 4);
    cudaMemcpy(da, ah.data(), ah.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bh.data(), bh.size() * 2, cudaMemcpyHostToDevice);
    cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, CUDA_R_16F,
                                    m, db, CUDA_R_16F, k, &beta, dc, CUDA_R_32F, m,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    std::vector<float> got(m * n);
    cudaMemcpy(got.data(), dc, got.size() * 4, cudaMemcpyDeviceToHost);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return s == CUBLAS_STATUS_SUCCESS && error(got, want, k) < 1e-6;
}

// bf16 A, B and C, FP32 compute (alpha 2, beta 1): C is read and written as bf16, within
// bf16's rounding (2^-8 relative) of the double reference.
static bool gemm_ex_bf16(cublasHandle_t h) {
    const int m = 9, n = 7, k = 12;
    auto a = random_values(m * k, 9), b = random_values(k * n, 10), c = random_values(m * n, 11);
    std::vector<__nv_bfloat16> ah(a.size()), bh(b.size()), ch(c.size());
    for (size_t i = 0; i < a.size(); i++) { ah[i] = __float2bfloat16(a[i]); a[i] = __bfloat162float(ah[i]); }
    for (size_t i = 0; i < b.size(); i++) { bh[i] = __float2bfloat16(b[i]); b[i] = __bfloat162float(bh[i]); }
    for (size_t i = 0; i < c.size(); i++) { ch[i] = __float2bfloat16(c[i]); c[i] = __bfloat162float(ch[i]); }
    std::vector<double> want(c.begin(), c.end());
    Case cs = {m, n, k, m, k, m, CUBLAS_OP_N, CUBLAS_OP_N};
    float alpha = 2, beta = 1;
    reference(cs, alpha, a, b, beta, want);
    __nv_bfloat16 *da, *db, *dc;
    cudaMalloc(&da, ah.size() * 2); cudaMalloc(&db, bh.size() * 2); cudaMalloc(&dc, ch.size() * 2);
    cudaMemcpy(da, ah.data(), ah.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bh.data(), bh.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dc, ch.data(), ch.size() * 2, cudaMemcpyHostToDevice);
    cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, CUDA_R_16BF,
                                    m, db, CUDA_R_16BF, k, &beta, dc, CUDA_R_16BF, m,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaMemcpy(ch.data(), dc, ch.size() * 2, cudaMemcpyDeviceToHost);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    int wrong = 0;
    for (size_t i = 0; i < ch.size(); i++)
        wrong += !(fabs(__bfloat162float(ch[i]) - want[i]) <= fabs(want[i]) / 256 + 1e-6);
    return s == CUBLAS_STATUS_SUCCESS && wrong == 0;
}

static bool ordered_on_stream(cublasHandle_t h) {
    // copies and the GEMM queued on one stream: the GEMM sees the upload, the download the GEMM
    const int n = 64;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cublasSetStream(h, stream);
    cudaStream_t got_stream;
    cublasGetStream(h, &got_stream);
    std::vector<float> a(n * n, 1.0f), c(n * n, 0.0f);
    float *da, *dc, alpha = 2, beta = 0;
    cudaMalloc(&da, n * n * 4); cudaMalloc(&dc, n * n * 4);
    cudaMemcpyAsync(da, a.data(), n * n * 4, cudaMemcpyHostToDevice, stream);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n, da, n, &beta, dc, n);
    cudaMemcpyAsync(c.data(), dc, n * n * 4, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    int wrong = 0;
    for (float x : c) wrong += x != 2.0f * n;
    cublasSetStream(h, 0);
    cudaFree(da); cudaFree(dc);
    cudaStreamDestroy(stream);
    return got_stream == stream && wrong == 0;
}

int main() {
    cublasHandle_t h;
    printf("create: %s\n", cublasGetStatusName(cublasCreate(&h)));
    const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    for (auto ta : ops)
        for (auto tb : ops) {
            Case c = {37, 29, 23, 0, 0, 41, ta, tb};
            c.lda = (ta == CUBLAS_OP_N ? c.m : c.k) + 3;
            c.ldb = (tb == CUBLAS_OP_N ? c.k : c.n) + 5;
            bool ok = gemm_case(h, c, 1.5f, -0.5f, false) && gemm_case(h, c, 1.0f, 0.0f, false);
            printf("sgemm %s%s: %s\n", op_name(ta), op_name(tb), ok ? "PASS" : "FAIL");
        }
    Case c = {20, 10, 30, 25, 31, 22, CUBLAS_OP_T, CUBLAS_OP_N};
    c.lda = 33;
    printf("beta 0 over NaN: %s\n", gemm_case(h, c, 0.5f, 0.0f, true) ? "PASS" : "FAIL");
    Case empty = {20, 10, 0, 20, 1, 20, CUBLAS_OP_N, CUBLAS_OP_N};
    printf("k 0 scales C: %s\n", gemm_case(h, empty, 1.0f, 3.0f, false) ? "PASS" : "FAIL");
    printf("strided batched: %s\n", strided_batched(h) ? "PASS" : "FAIL");
    printf("gemmex half: %s\n", gemm_ex_half(h) ? "PASS" : "FAIL");
    printf("gemmex bf16: %s\n", gemm_ex_bf16(h) ? "PASS" : "FAIL");
    printf("stream order: %s\n", ordered_on_stream(h) ? "PASS" : "FAIL");
    float one = 1, *d;
    cudaMalloc(&d, 64 * 4);
    printf("lda < m: %s\n", cublasGetStatusName(cublasSgemm(
        h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, d, 4, d, 8, &one, d, 8)));
    printf("bad type: %s\n", cublasGetStatusName(cublasGemmEx(
        h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_8I, 2, d, CUDA_R_8I, 2, &one, d,
        CUDA_R_8I, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)));
    cudaFree(d);
    printf("destroy: %s\n", cublasGetStatusName(cublasDestroy(h)));
    return 0;
}
