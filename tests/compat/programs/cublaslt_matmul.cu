// cuBLASLt matmuls against a host reference in double, as llm.c calls them: D = op(A) B + bias
// with A transposed (weights stored k x m), out of place with beta = 1, strided batches, the
// heuristic, and an epilogue ptxport does not run (DRELU) refused by name.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cublasLt.h>

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

static cublasLtMatrixLayout_t layout(int rows, int cols, int ld, int batch, long long stride) {
    cublasLtMatrixLayout_t l;
    cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof stride);
    return l;
}

int main() {
    const int m = 19, n = 11, k = 13, batch = 2, lda = k + 2, ldb = k + 1, ldc = m, ldd = m + 3;
    const long long sa = (long long)lda * m, sb = (long long)ldb * n + 4;
    const long long sc = (long long)ldc * n, sd = (long long)ldd * n;
    auto a = random_values(sa * batch, 1), b = random_values(sb * batch, 2);
    auto c = random_values(sc * batch, 3), bias = random_values(m, 4);
    std::vector<float> d(sd * batch, 7.0f);
    float alpha = 0.5f, beta = 1.0f;
    // reference: D[i,j] = alpha sum_p A[p,i] B[p,j] + beta C[i,j] + bias[i], per batch
    double worst = 0;
    std::vector<double> want(d.begin(), d.end());
    for (int t = 0; t < batch; t++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double sum = 0;
                for (int p = 0; p < k; p++)
                    sum += (double)a[t * sa + p + (size_t)i * lda] * b[t * sb + p + (size_t)j * ldb];
                want[t * sd + i + (size_t)j * ldd] =
                    alpha * sum + beta * c[t * sc + i + (size_t)j * ldc] + bias[i];
            }
    float *da = upload(a), *db = upload(b), *dc = upload(c), *dd = upload(d), *dbias = upload(bias);

    cublasLtHandle_t lt;
    printf("create: %d\n", (int)cublasLtCreate(&lt));
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t transa = CUBLAS_OP_T;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
    cublasLtMatrixLayout_t la = layout(k, m, lda, batch, sa), lb = layout(k, n, ldb, batch, sb);
    cublasLtMatrixLayout_t lc = layout(m, n, ldc, batch, sc), ld = layout(m, n, ldd, batch, sd);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    size_t workspace = 1 << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &workspace, sizeof workspace);
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 1,
                                                      &heuristic, &found);
    printf("heuristic: %d found %d state %d\n", (int)s, found, (int)heuristic.state);
    s = cublasLtMatmul(lt, desc, &alpha, da, la, db, lb, &beta, dc, lc, dd, ld, &heuristic.algo,
                       nullptr, 0, 0);
    cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < d.size(); i++) {
        double e = std::isnan(d[i]) ? INFINITY : fabs(d[i] - want[i]);
        worst = e > worst ? e : worst;
    }
    printf("matmul bias: %d %s\n", (int)s, worst < 1e-5 ? "PASS" : "FAIL");

    epilogue = CUBLASLT_EPILOGUE_DRELU;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    s = cublasLtMatmul(lt, desc, &alpha, da, la, db, lb, &beta, dc, lc, dd, ld, nullptr, nullptr,
                       0, 0);
    printf("drelu: %s\n", cublasGetStatusName(s));
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc); cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
    printf("destroy: %d\n", (int)cublasLtDestroy(lt));
    return 0;
}
