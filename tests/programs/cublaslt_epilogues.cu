// cublasLtMatmul's epilogues against their formulas in double (cuBLASLt's documentation:
// GELU is the tanh approximation, _AUX stores GELU's input, DGELU multiplies by GELU's
// derivative at the auxiliary input, BGRAD stores bias gradients), in FP32 with odd sizes, and
// in BF16 as llm.c's train_gpt2.cu calls them (GELU_AUX_BIAS forward, DGELU and BGRADB
// backward, A transposed as llm.c's forward, not in its backward) and a strided batch as
// llm.c's attention. Also row-major layouts, batches with a strided batch offset and bias
// batch stride, the heuristic, and a leading dimension too small for its matrix.
//
// NVIDIA's cuBLASLt 13 on an H100 refuses some combinations its documentation does not rule
// out (FP32 DGELU_BGRAD, BGRADA and BGRADB; BIAS with row-major layouts) with
// CUBLAS_STATUS_NOT_SUPPORTED, where ptxport computes them. For those the program accepts
// either outcome: a refusal (noted on stderr), or results that are right; the line on stdout
// is the same. cuBLASLt evaluates GELU's tanh with a hardware approximation: results through
// GELU are checked to 1e-4.
#include <cstdint>
#include <vector>
#include <cuda_bf16.h>
#include <cublasLt.h>
#include "common.h"

static unsigned g_seed = 7;
static double next_value() {   // a multiple of 1/8 in [-1, 1]
  g_seed = g_seed * 1103515245u + 12345u;
  return (int)((g_seed >> 16) % 17) / 8.0 - 1.0;
}

static double gelu(double x) {
  return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double dgelu(double x) {
  double t = tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
}

template <typename T> static T from_double(double v) { return (T)v; }
template <> __nv_bfloat16 from_double<__nv_bfloat16>(double v) { return __float2bfloat16((float)v); }
template <typename T> static double to_double(T v) { return (double)v; }
template <> double to_double<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> struct Buffer {   // host values and their device copy
  std::vector<T> host;
  T *dev;
  explicit Buffer(size_t n, double scale = 1) : host(n) {
    for (auto &x : host) x = from_double<T>(scale * next_value());
    CHECK(cudaMalloc(&dev, n * sizeof(T)));
    CHECK(cudaMemcpy(dev, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<double> download() const {
    std::vector<T> out(host.size());
    CHECK(cudaMemcpy(out.data(), dev, out.size() * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<double> d(out.size());
    for (size_t i = 0; i < d.size(); ++i) d[i] = to_double(out[i]);
    return d;
  }
  double at(size_t i) const { return to_double(host[i]); }
};

// A combination NVIDIA's cuBLASLt may refuse: true (and a note on stderr) when it did.
static bool refused_by_library(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_NOT_SUPPORTED) return false;
  fprintf(stderr, "note: %s: CUBLAS_STATUS_NOT_SUPPORTED\n", what);
  return true;
}

// The number of elements that differ by more than tol * max(1, |want|); the first few are
// printed.
static size_t count_far(const char *label, const std::vector<double> &got, const std::vector<double> &want,
                        double tol) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(fabs(got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])))) {
      if (bad < 5) printf("%s: [%zu] got %.9g want %.9g\n", label, i, got[i], want[i]);
      ++bad;
    }
  return bad;
}

// One line for a result that may have been refused: "label: right or refused: ok".
static void right_or_refused(const char *label, size_t bad) {
  if (bad) {
    printf("FAIL: %s: %zu element(s) differ\n", label, bad);
    ++g_failures;
  } else {
    printf("%s: right or refused: ok\n", label);
  }
}

#define LT(call) lt_ok(call, #call)
static void lt_ok(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    printf("FAIL: %s returned %s\n", what, cublasGetStatusName(s));
    ++g_failures;
  }
}

static cublasLtMatrixLayout_t layout(cudaDataType type, int rows, int cols, long long ld,
                                     int batch = 1, long long stride = 0, bool row = false) {
  cublasLtMatrixLayout_t l;
  LT(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  int32_t order = row ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL;
  LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order));
  LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
  LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return l;
}

template <typename T> static void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, T v) {
  LT(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v));
}

// The heuristic, then the matmul D = epilogue(alpha op(A) op(B) + beta D), as programs call them.
static cublasStatus_t run(cublasLtHandle_t lt, cublasLtMatmulDesc_t desc, const void *a, cublasLtMatrixLayout_t la,
                          const void *b, cublasLtMatrixLayout_t lb, void *d, cublasLtMatrixLayout_t ld,
                          float alpha, float beta) {
  cublasLtMatmulPreference_t pref;
  LT(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &found);
  if (s == CUBLAS_STATUS_SUCCESS && found == 1)
    s = cublasLtMatmul(lt, desc, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &result.algo, nullptr, 0, 0);
  cublasLtMatmulPreferenceDestroy(pref);
  return s;
}

// One matmul: D (m x n, ld m) = epilogue(alpha op(A) B + beta C) with A stored k x m (op T;
// m x k for op N), B k x n, C = D's buffer.
struct Case {
  cublasLtHandle_t lt;
  cudaDataType type;
  int m, n, k;
  bool trans_a = true;
};

static cublasStatus_t matmul(const Case &c, cublasLtMatmulDesc_t desc, const void *a, const void *b,
                             void *d, float alpha, float beta, int ld_a) {
  cublasLtMatrixLayout_t la = c.trans_a ? layout(c.type, c.k, c.m, ld_a) : layout(c.type, c.m, c.k, ld_a);
  cublasLtMatrixLayout_t lb = layout(c.type, c.k, c.n, c.k), ld = layout(c.type, c.m, c.n, c.m);
  cublasStatus_t s = run(c.lt, desc, a, la, b, lb, d, ld, alpha, beta);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  return s;
}

static cublasLtMatmulDesc_t describe(int epilogue, bool trans_a = true) {
  cublasLtMatmulDesc_t desc;
  LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set<int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSA, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set<uint32_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  return desc;
}

struct Named {
  int epilogue;
  const char *name;
};

// The FP32 epilogues one by one, against the formulas.
static void fp32_epilogues(cublasLtHandle_t lt) {
  const int m = 13, n = 7, k = 5, aux_ld = 16, lda = 6;
  const Named all[] = {{CUBLASLT_EPILOGUE_DEFAULT, "DEFAULT"}, {CUBLASLT_EPILOGUE_RELU, "RELU"},
                       {CUBLASLT_EPILOGUE_BIAS, "BIAS"}, {CUBLASLT_EPILOGUE_RELU_BIAS, "RELU_BIAS"},
                       {CUBLASLT_EPILOGUE_GELU, "GELU"}, {CUBLASLT_EPILOGUE_GELU_BIAS, "GELU_BIAS"},
                       {CUBLASLT_EPILOGUE_GELU_AUX, "GELU_AUX"},
                       {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, "GELU_AUX_BIAS"},
                       {CUBLASLT_EPILOGUE_DGELU, "DGELU"}, {CUBLASLT_EPILOGUE_DGELU_BGRAD, "DGELU_BGRAD"},
                       {CUBLASLT_EPILOGUE_BGRADA, "BGRADA"}, {CUBLASLT_EPILOGUE_BGRADB, "BGRADB"}};
  Case c{lt, CUDA_R_32F, m, n, k};
  for (const Named &e : all) {
    Buffer<float> a((size_t)lda * m), b((size_t)k * n), d((size_t)m * n, 2), aux((size_t)aux_ld * n, 2);
    bool bias_out = e.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD || e.epilogue == CUBLASLT_EPILOGUE_BGRADA ||
                    e.epilogue == CUBLASLT_EPILOGUE_BGRADB;
    bool uses_bias = bias_out || (e.epilogue & CUBLASLT_EPILOGUE_BIAS);
    bool uses_aux = e.epilogue & 128;
    Buffer<float> bias(e.epilogue == CUBLASLT_EPILOGUE_BGRADB ? n : m);
    const float alpha = 0.75f, beta = e.epilogue == CUBLASLT_EPILOGUE_DEFAULT ? 0.0f : 0.5f;
    std::vector<double> want_d(m * n), want_aux(aux.host.begin(), aux.host.end()), want_bias(bias.host.size(), 0);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double x = 0;
        for (int p = 0; p < k; ++p) x += a.at(p + (size_t)i * lda) * b.at(p + (size_t)j * k);
        x = alpha * x + beta * d.at(i + (size_t)j * m);
        if (e.epilogue & CUBLASLT_EPILOGUE_BIAS) x += bias.at(i);
        if (uses_aux && !(e.epilogue & 64)) want_aux[i + (size_t)j * aux_ld] = x;
        if (e.epilogue & CUBLASLT_EPILOGUE_RELU) x = x > 0 ? x : 0;
        if (e.epilogue & CUBLASLT_EPILOGUE_GELU) x = gelu(x);
        if (e.epilogue & 64) x *= dgelu(aux.at(i + (size_t)j * aux_ld));
        want_d[i + (size_t)j * m] = x;
        if (e.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) want_bias[i] += x;
      }
    for (int p = 0; p < k; ++p) {
      if (e.epilogue == CUBLASLT_EPILOGUE_BGRADA)
        for (int i = 0; i < m; ++i) want_bias[i] += a.at(p + (size_t)i * lda);
      if (e.epilogue == CUBLASLT_EPILOGUE_BGRADB)
        for (int j = 0; j < n; ++j) want_bias[j] += b.at(p + (size_t)j * k);
    }
    cublasLtMatmulDesc_t desc = describe(e.epilogue);
    if (uses_bias) set<void *>(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.dev);
    if (uses_aux) {
      set<void *>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux.dev);
      set<int64_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld);
    }
    cublasStatus_t s = matmul(c, desc, a.dev, b.dev, d.dev, alpha, beta, lda);
    cublasLtMatmulDescDestroy(desc);
    const double tol = e.epilogue & (CUBLASLT_EPILOGUE_GELU | 64) ? 1e-4 : 1e-5;   // through tanh
    char label[64];
    snprintf(label, sizeof label, "%s: D", e.name);
    bool refused = bias_out && refused_by_library(s, e.name);
    if (s != CUBLAS_STATUS_SUCCESS && !refused) {
      printf("FAIL: %s: %s\n", e.name, cublasGetStatusName(s));
      ++g_failures;
      continue;
    }
    if (bias_out) {   // FP32 bias gradients: NVIDIA's cuBLASLt may refuse them
      size_t bad = 0;
      if (!refused) {
        bad += count_far(label, d.download(), want_d, tol);
        if (uses_aux) bad += count_far(e.name, aux.download(), want_aux, 1e-6);
        bad += count_far(e.name, bias.download(), want_bias, tol);
      }
      right_or_refused(e.name, bad);
      continue;
    }
    expect_close(label, d.download().data(), want_d.data(), want_d.size(), tol);
    if (uses_aux) {
      snprintf(label, sizeof label, "%s: aux", e.name);
      expect_close(label, aux.download().data(), want_aux.data(), want_aux.size(), 1e-6);
    }
  }
}

// llm.c's three calls in BF16: forward out = GELU(W^T x + b) keeping pre-GELU, backward
// dinp = (W dout) * GELU'(pre-GELU), and dW += x dout^T with dbias = sums of dout (BGRADB).
static void llmc_bf16(cublasLtHandle_t lt) {
  typedef __nv_bfloat16 bf16;
  const int C = 24, OC = 16, BT = 8;   // channels, output channels, batch x time
  Buffer<bf16> weight((size_t)C * OC), inp((size_t)C * BT), bias(OC), out((size_t)OC * BT);
  Buffer<bf16> pre_gelu((size_t)OC * BT);
  Case fwd{lt, CUDA_R_16BF, OC, BT, C};
  cublasLtMatmulDesc_t desc = describe(CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
  set<void *>(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.dev);
  set<int32_t>(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_16BF);
  set<void *>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, pre_gelu.dev);
  set<int64_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, OC);
  LT(matmul(fwd, desc, weight.dev, inp.dev, out.dev, 1.0f, 0.0f, C));
  cublasLtMatmulDescDestroy(desc);
  std::vector<double> want_out(OC * BT), want_pre(OC * BT);
  for (int j = 0; j < BT; ++j)
    for (int i = 0; i < OC; ++i) {
      double x = bias.at(i);
      for (int p = 0; p < C; ++p) x += weight.at(p + (size_t)i * C) * inp.at(p + (size_t)j * C);
      want_pre[i + j * OC] = x;
      want_out[i + j * OC] = gelu(x);
    }
  const double bf16_tol = 1.0 / 128;   // one rounding to 8 significant bits
  expect_close("bf16 GELU_AUX_BIAS: out", out.download().data(), want_out.data(), want_out.size(), bf16_tol);
  std::vector<double> pre = pre_gelu.download();
  expect_close("bf16 GELU_AUX_BIAS: pre-GELU", pre.data(), want_pre.data(), pre.size(), bf16_tol);

  // dinp (C x BT) = W (C x OC, not transposed, as llm.c's backward) dout (OC x BT), times
  // GELU' at the pre-GELU values (C x BT)
  Buffer<bf16> w2((size_t)OC * C), dout((size_t)OC * BT), pre2((size_t)C * BT, 2), dinp((size_t)C * BT);
  Case bwd{lt, CUDA_R_16BF, C, BT, OC, false};
  desc = describe(CUBLASLT_EPILOGUE_DGELU, false);
  set<void *>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, pre2.dev);
  set<int64_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, C);
  LT(matmul(bwd, desc, w2.dev, dout.dev, dinp.dev, 1.0f, 0.0f, C));
  cublasLtMatmulDescDestroy(desc);
  std::vector<double> want_dinp(C * BT);
  for (int j = 0; j < BT; ++j)
    for (int i = 0; i < C; ++i) {
      double x = 0;
      for (int p = 0; p < OC; ++p) x += w2.at(i + (size_t)p * C) * dout.at(p + (size_t)j * OC);
      want_dinp[i + j * C] = x * dgelu(pre2.at(i + j * C));
    }
  expect_close("bf16 DGELU: dinp", dinp.download().data(), want_dinp.data(), want_dinp.size(), bf16_tol);

  // dweight (C x OC) += inp (C x BT) dout^T (BT x OC); dbias (OC) = row sums of dout
  Buffer<bf16> dweight((size_t)C * OC), dbias(OC);
  cublasLtMatmulDesc_t g;
  LT(cublasLtMatmulDescCreate(&g, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set<int32_t>(g, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_T);
  set<uint32_t>(g, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADB);
  set<void *>(g, CUBLASLT_MATMUL_DESC_BIAS_POINTER, dbias.dev);
  cublasLtMatrixLayout_t la = layout(CUDA_R_16BF, C, BT, C), lb = layout(CUDA_R_16BF, OC, BT, OC);
  cublasLtMatrixLayout_t ld = layout(CUDA_R_16BF, C, OC, C);
  float one = 1;
  LT(cublasLtMatmul(lt, g, &one, inp.dev, la, dout.dev, lb, &one, dweight.dev, ld, dweight.dev, ld,
                    nullptr, nullptr, 0, 0));
  std::vector<double> want_dw(C * OC), want_db(OC, 0);
  for (int j = 0; j < OC; ++j) {
    for (int p = 0; p < BT; ++p) want_db[j] += dout.at(j + (size_t)p * OC);
    for (int i = 0; i < C; ++i) {
      double x = dweight.at(i + (size_t)j * C);
      for (int p = 0; p < BT; ++p) x += inp.at(i + (size_t)p * C) * dout.at(j + (size_t)p * OC);
      want_dw[i + j * C] = x;
    }
  }
  expect_close("bf16 BGRADB: dweight", dweight.download().data(), want_dw.data(), want_dw.size(), bf16_tol);
  expect_close("bf16 BGRADB: dbias", dbias.download().data(), want_db.data(), want_db.size(), bf16_tol);
  cublasLtMatmulDescDestroy(g);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
}

// Row-major A, B and D, two batches with a strided batch offset and one bias per batch.
static void layouts(cublasLtHandle_t lt) {
  const int m = 5, n = 6, k = 3, batch = 2, lda = 4, ldb = 7, ldd = 8;
  const long long sa = lda * m + 1, sb = ldb * k, sd = ldd * m + 3;
  Buffer<float> a(sa * batch), b(sb * batch), d(sd * batch), bias(2 * m + 1);
  cublasLtMatmulDesc_t desc;
  LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set<uint32_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  set<void *>(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.dev);
  set<int64_t>(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, m + 1);
  // A m x k row-major (A(i, p) at i * lda + p), B k x n row-major, D m x n row-major
  cublasLtMatrixLayout_t la = layout(CUDA_R_32F, m, k, lda, batch, sa, true);
  cublasLtMatrixLayout_t lb = layout(CUDA_R_32F, k, n, ldb, batch, sb, true);
  cublasLtMatrixLayout_t ldl = layout(CUDA_R_32F, m, n, ldd, batch, sd, true);
  std::vector<double> want(d.host.begin(), d.host.end());
  for (int t = 0; t < batch; ++t)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double x = bias.at(t * (m + 1) + i);
        for (int p = 0; p < k; ++p) x += a.at(t * sa + i * lda + p) * b.at(t * sb + p * ldb + j);
        want[t * sd + i * ldd + j] = x - want[t * sd + i * ldd + j];
      }
  float one = 1, minus_one = -1;
  cublasStatus_t s = cublasLtMatmul(lt, desc, &one, a.dev, la, b.dev, lb, &minus_one, d.dev, ldl, d.dev, ldl,
                                    nullptr, nullptr, 0, 0);
  bool refused = refused_by_library(s, "row-major batched BIAS");
  if (s != CUBLAS_STATUS_SUCCESS && !refused) {
    printf("FAIL: row-major batched BIAS: %s\n", cublasGetStatusName(s));
    ++g_failures;
  } else {
    right_or_refused("row-major batched BIAS", refused ? 0 : count_far("row-major batched BIAS", d.download(), want, 1e-6));
  }

  // A leading dimension below the column count: refused (INVALID_VALUE, or NOT_SUPPORTED
  // from a library that refuses row-major BIAS before it looks at the layouts).
  cublasLtMatrixLayout_t short_ld = layout(CUDA_R_32F, m, k, k - 1, batch, sa, true);
  s = cublasLtMatmul(lt, desc, &one, a.dev, short_ld, b.dev, lb, &one, d.dev, ldl, d.dev, ldl, nullptr, nullptr,
                     0, 0);
  fprintf(stderr, "note: row-major ld < cols: %s\n", cublasGetStatusName(s));
  printf("row-major ld < cols: %s\n", s == CUBLAS_STATUS_INVALID_VALUE || s == CUBLAS_STATUS_NOT_SUPPORTED
                                          ? "refused" : cublasGetStatusName(s));
  require(s == CUBLAS_STATUS_INVALID_VALUE || s == CUBLAS_STATUS_NOT_SUPPORTED,
          "a row-major ld below the column count is refused");
  cublasLtMatrixLayoutDestroy(short_ld);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ldl);
  cublasLtMatmulDescDestroy(desc);
}

// llm.c's attention (attention_forward's k^T q): a strided batch of BF16 products, A
// transposed, no epilogue.
static void llmc_batched(cublasLtHandle_t lt) {
  typedef __nv_bfloat16 bf16;
  const int T = 8, HS = 16, batch = 3;
  Buffer<bf16> key((size_t)HS * T * batch), query((size_t)HS * T * batch), att((size_t)T * T * batch);
  cublasLtMatmulDesc_t desc = describe(CUBLASLT_EPILOGUE_DEFAULT);
  cublasLtMatrixLayout_t la = layout(CUDA_R_16BF, HS, T, HS, batch, (long long)HS * T);
  cublasLtMatrixLayout_t lb = layout(CUDA_R_16BF, HS, T, HS, batch, (long long)HS * T);
  cublasLtMatrixLayout_t ld = layout(CUDA_R_16BF, T, T, T, batch, (long long)T * T);
  LT(run(lt, desc, key.dev, la, query.dev, lb, att.dev, ld, 1.0f, 0.0f));
  std::vector<double> want((size_t)T * T * batch);
  for (int t = 0; t < batch; ++t)
    for (int j = 0; j < T; ++j)
      for (int i = 0; i < T; ++i) {
        double x = 0;
        for (int p = 0; p < HS; ++p)
          x += key.at((size_t)t * HS * T + p + (size_t)i * HS) * query.at((size_t)t * HS * T + p + (size_t)j * HS);
        want[(size_t)t * T * T + i + (size_t)j * T] = x;
      }
  expect_close("bf16 strided batch, A transposed", att.download().data(), want.data(), want.size(), 1.0 / 128);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
}

// Attributes read back (sizeInBytes 0 asks for the size), defaults included, and status names.
static void attributes() {
  cublasLtMatrixLayout_t l = layout(CUDA_R_16BF, 6, 4, 8, 3, 40);
  size_t need = 0, wrote = 0;
  int64_t ld = 0, stride = 0;
  LT(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, nullptr, 0, &need));
  LT(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &wrote));
  LT(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride, nullptr));
  printf("layout ld: %zu bytes, %zu written, %lld; stride %lld\n", need, wrote, (long long)ld, (long long)stride);
  cublasLtMatmulDesc_t desc = describe(CUBLASLT_EPILOGUE_GELU_BIAS, false);
  int32_t trans = -7, bias_type = 0;
  uint32_t epilogue = 0;
  LT(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans, &wrote));
  LT(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue, &wrote));
  LT(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type, &wrote));
  printf("desc: transa %d, epilogue %u, bias type %d (default)\n", trans, epilogue, bias_type);
  cublasStatus_t s = cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, 4, &wrote);
  printf("ld read into 4 bytes: %s\n", cublasLtGetStatusName(s));
  fprintf(stderr, "note: %s\n", cublasLtGetStatusString(s));
  cublasLtMatmulDescDestroy(desc);
  cublasLtMatrixLayoutDestroy(l);
}

int main() {
  cublasLtHandle_t lt;
  cublasStatus_t s = cublasLtCreate(&lt);
  printf("create: %s\n", cublasGetStatusName(s));
  if (s != CUBLAS_STATUS_SUCCESS) return 1;
  attributes();
  fp32_epilogues(lt);
  llmc_bf16(lt);
  llmc_batched(lt);
  layouts(lt);
  CHECK(cudaDeviceSynchronize());
  printf("destroy: %s\n", cublasGetStatusName(cublasLtDestroy(lt)));
  return finish();
}
