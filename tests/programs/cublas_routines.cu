// cuBLAS's GEMMs, gemv, geam and Level-1 reductions against a host reference in double: odd
// sizes, every transpose pair, leading dimensions larger than the matrices, alpha and beta
// zero and not, batches with a zero stride (one matrix broadcast), pointer arrays, device
// pointer mode, half / bfloat16 / int8 data, TF32 modes, and bad arguments, which cuBLAS
// answers with CUBLAS_STATUS_INVALID_VALUE (or _NOT_SUPPORTED for a type combination). For
// most illegal arguments cuBLAS also prints its xerbla line on stdout (" ** On entry to SGEMM
// parameter number 3 had an illegal value"), which the expected output holds.
//
// Inputs are multiples of 1/8 in [-1, 1]: every product and sum here is exact in FP32, TF32,
// FP16 and BF16 alike, so each result must equal the reference whatever precision a library
// computes in (within 1e-6, for the last bit of a fused multiply-add).
#include <cstdint>
#include <cstring>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "common.h"

static unsigned g_seed = 1;
static double next_value() {   // a multiple of 1/8 in [-1, 1]
  g_seed = g_seed * 1103515245u + 12345u;
  return (int)((g_seed >> 16) % 17) / 8.0 - 1.0;
}

template <typename T> static T from_double(double v) { return (T)v; }
template <> __half from_double<__half>(double v) { return __float2half((float)v); }
template <> __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __float2bfloat16((float)v);
}
template <typename T> static double to_double(T v) { return (double)v; }
template <> double to_double<__half>(__half v) { return __half2float(v); }
template <> double to_double<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// A column-major matrix (or a batch of them, `stride` elements apart; -1: ld * cols; 0: one
// matrix for every batch) on the host and on the device.
template <typename T> struct Matrix {
  int rows, cols, ld, batch;
  long long stride;
  std::vector<T> host;
  T *dev = nullptr;
  Matrix(int r, int c, int l, int b = 1, long long s = -1, double scale = 1)
      : rows(r), cols(c), ld(l), batch(b), stride(s < 0 ? (long long)l * c : s),
        host((size_t)(stride * (b - 1) + (long long)l * c)) {
    for (auto &x : host) x = from_double<T>(scale * next_value());
    CHECK(cudaMalloc(&dev, host.size() * sizeof(T) + 16));
    upload();
  }
  void upload() { CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> download() const {
    std::vector<T> out(host.size());
    CHECK(cudaMemcpy(out.data(), dev, out.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
  double at(int t, int i, int j) const { return to_double(host[t * stride + i + (size_t)j * ld]); }
};

// op(A)(i, p) of a stored matrix
template <typename T> static double op_at(const Matrix<T> &a, int t, bool trans, int i, int p) {
  return trans ? a.at(t, p, i) : a.at(t, i, p);
}

// The reference of C = alpha op(A) op(B) + beta C (beta 0: C not read), as doubles laid out
// like C's host vector.
template <typename TA, typename TC>
static std::vector<double> reference(bool ta, bool tb, int m, int n, int k, double alpha,
                                     const Matrix<TA> &a, const Matrix<TA> &b, double beta,
                                     const Matrix<TC> &c) {
  std::vector<double> want(c.host.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = to_double(c.host[i]);
  for (int t = 0; t < c.batch; ++t)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int p = 0; p < k; ++p)
          sum += op_at(a, t, ta, i, p) * op_at(b, t, tb, p, j);
        size_t at = t * c.stride + i + (size_t)j * c.ld;
        want[at] = alpha * sum + (beta != 0 ? beta * want[at] : 0);
      }
  return want;
}

template <typename T>
static void expect_matrix(const char *label, const Matrix<T> &c, const std::vector<double> &want) {
  std::vector<T> got_t = c.download();
  std::vector<double> got(got_t.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = to_double(got_t[i]);
  expect_close(label, got.data(), want.data(), got.size(), 1e-6);
}

static void expect_status(const char *label, cublasStatus_t got, cublasStatus_t want) {
  printf("%s: %s\n", label, cublasGetStatusName(got));
  if (got != want) {
    printf("FAIL: %s: expected %s\n", label, cublasGetStatusName(want));
    ++g_failures;
  }
}

#define CUBLAS(call) expect_status_ok(call, #call)
static void expect_status_ok(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    printf("FAIL: %s returned %s\n", what, cublasGetStatusName(s));
    ++g_failures;
  }
}

static const cublasOperation_t OPS[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
static const char OP_NAMES[3] = {'N', 'T', 'C'};

static void sgemm_transposes(cublasHandle_t h) {
  const int m = 13, n = 9, k = 7;
  float alpha = 0.5f, beta = -1.5f;
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 3; ++y) {
      bool ta = x > 0, tb = y > 0;
      Matrix<float> a(ta ? k : m, ta ? m : k, (ta ? k : m) + 3), b(tb ? n : k, tb ? k : n, (tb ? n : k) + 2);
      Matrix<float> c(m, n, m + 1);
      auto want = reference(ta, tb, m, n, k, alpha, a, b, beta, c);
      CUBLAS(cublasSgemm(h, OPS[x], OPS[y], m, n, k, &alpha, a.dev, a.ld, b.dev, b.ld, &beta, c.dev, c.ld));
      char label[32];
      snprintf(label, sizeof label, "sgemm %c%c", OP_NAMES[x], OP_NAMES[y]);
      expect_matrix(label, c, want);
    }
}

static void gemm_scalars(cublasHandle_t h) {
  const int m = 6, n = 5, k = 3;
  Matrix<double> a(k, m, k + 1), b(n, k, n), c(m, n, m);
  for (auto &v : c.host) v = NAN;
  c.upload();
  double one = 1, zero = 0;
  auto want = reference(true, true, m, n, k, 1, a, b, 0, c);
  CUBLAS(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_T, m, n, k, &one, a.dev, a.ld, b.dev, b.ld, &zero, c.dev, c.ld));
  expect_matrix("dgemm TT beta 0 over NaN", c, want);

  Matrix<float> fa(m, k, m), fb(k, n, k), fc(m, n, m + 2);
  float alpha0 = 0, beta2 = 2;
  auto want0 = reference(false, false, m, n, k, 0, fa, fb, 2, fc);
  CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha0, fa.dev, m, fb.dev, k, &beta2, fc.dev, fc.ld));
  expect_matrix("sgemm alpha 0 scales C", fc, want0);
  fc.host = fc.download();
  auto wantk = reference(false, false, m, n, 0, 1, fa, fb, 2, fc);
  float onef = 1;
  CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, 0, &onef, fa.dev, m, fb.dev, 1, &beta2, fc.dev, fc.ld));
  expect_matrix("sgemm k 0 scales C", fc, wantk);
}

static void strided_batches(cublasHandle_t h) {
  const int m = 5, n = 7, k = 9, batch = 3;
  Matrix<float> a(m, k, m + 1, batch, 0), b(k, n, k, batch, (long long)k * n + 3), c(m, n, m, batch);
  float alpha = 1.5f, beta = 0.5f;
  auto want = reference(false, false, m, n, k, alpha, a, b, beta, c);
  CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.dev, a.ld, 0,
                                   b.dev, b.ld, b.stride, &beta, c.dev, c.ld, c.stride, batch));
  expect_matrix("sgemm strided batched, A broadcast", c, want);

  Matrix<double> da(k, m, k, batch), db(k, n, k + 2, batch), dc(m, n, m + 1, batch);
  double one = 1, zero = 0;
  auto dwant = reference(true, false, m, n, k, 1, da, db, 0, dc);
  CUBLAS(cublasDgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da.dev, da.ld, da.stride,
                                   db.dev, db.ld, db.stride, &zero, dc.dev, dc.ld, dc.stride, batch));
  expect_matrix("dgemm strided batched TN", dc, dwant);
}

static void half_gemms(cublasHandle_t h) {
  const int m = 11, n = 6, k = 5, batch = 2;
  Matrix<__half> a(m, k, m + 5), b(n, k, n + 1), c(m, n, m);
  __half alpha = __float2half(0.5f), beta = __float2half(-1.0f);
  auto want = reference(false, true, m, n, k, 0.5, a, b, -1.0, c);
  CUBLAS(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, a.dev, a.ld, b.dev, b.ld, &beta, c.dev, c.ld));
  expect_matrix("hgemm NT", c, want);

  Matrix<__half> ba(k, m, k, batch), bb(k, n, k, batch), bc(m, n, m, batch);
  auto bwant = reference(true, false, m, n, k, 0.5, ba, bb, -1.0, bc);
  CUBLAS(cublasHgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, ba.dev, k, ba.stride,
                                   bb.dev, k, bb.stride, &beta, bc.dev, m, bc.stride, batch));
  expect_matrix("hgemm strided batched TN", bc, bwant);

  Matrix<__half> ea(m, k, m), eb(k, n, k + 1);
  Matrix<float> ec(m, n, m + 2);
  float one = 1, zero = 0;
  auto ewant = reference(false, false, m, n, k, 1, ea, eb, 0, ec);
  CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, ea.dev, CUDA_R_16F, ea.ld, eb.dev,
                      CUDA_R_16F, eb.ld, &zero, ec.dev, CUDA_R_32F, ec.ld, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
  expect_matrix("gemmex f16 in, f32 out", ec, ewant);

  Matrix<__nv_bfloat16> sa(k, m, k, batch, 0), sb(n, k, n, batch, 0), sc(m, n, m + 1, batch);
  float alpha2 = 2, beta1 = 1;
  auto swant = reference(true, true, m, n, k, 2, sa, sb, 1, sc);
  CUBLAS(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_T, m, n, k, &alpha2, sa.dev,
                                    CUDA_R_16BF, sa.ld, 0, sb.dev, CUDA_R_16BF, sb.ld, 0, &beta1,
                                    sc.dev, CUDA_R_16BF, sc.ld, sc.stride, batch,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
  expect_matrix("gemm strided batched ex bf16, A and B broadcast", sc, swant);
}

static void int8_and_tf32(cublasHandle_t h) {
  const int m = 12, n = 8, k = 16;
  Matrix<int8_t> a(k, m, k, 1, -1, 100), b(k, n, k, 1, -1, 100);
  Matrix<int32_t> c(m, n, m, 1, -1, 1000);
  int alpha = 3, beta = -2;
  auto want = reference(true, false, m, n, k, 3, a, b, -2, c);
  CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a.dev, CUDA_R_8I, k, b.dev,
                      CUDA_R_8I, k, &beta, c.dev, CUDA_R_32I, m, CUBLAS_COMPUTE_32I,
                      CUBLAS_GEMM_DEFAULT));
  expect_matrix("gemmex int8 in, int32 out, 32I compute", c, want);

  Matrix<float> fa(7, 5, 9), fb(5, 3, 5), fc(7, 3, 7);
  float one = 1, zero = 0;
  auto fwant = reference(false, false, 7, 3, 5, 1, fa, fb, 0, fc);
  CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 7, 3, 5, &one, fa.dev, CUDA_R_32F, 9, fb.dev,
                      CUDA_R_32F, 5, &zero, fc.dev, CUDA_R_32F, 7, CUBLAS_COMPUTE_32F_FAST_TF32,
                      CUBLAS_GEMM_DEFAULT));
  expect_matrix("gemmex 32F_FAST_TF32", fc, fwant);
  CUBLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  Matrix<float> gc(7, 3, 8);
  auto gwant = reference(false, false, 7, 3, 5, 1, fa, fb, 0, gc);
  CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 7, 3, 5, &one, fa.dev, 9, fb.dev, 5, &zero, gc.dev, 8));
  expect_matrix("sgemm in TF32 math mode", gc, gwant);
  CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
}

template <typename T>
static std::vector<T *> matrices_on_device(std::vector<Matrix<T>> &ms) {
  std::vector<T *> p;
  for (auto &x : ms) p.push_back(x.dev);
  return p;
}

template <typename T> static void **upload_pointers(const std::vector<T *> &p) {
  void **d;
  CHECK(cudaMalloc(&d, p.size() * sizeof(void *)));
  CHECK(cudaMemcpy(d, p.data(), p.size() * sizeof(void *), cudaMemcpyHostToDevice));
  return d;
}

static void pointer_arrays(cublasHandle_t h) {
  const int m = 7, n = 4, k = 6, batch = 3;
  std::vector<Matrix<__half>> as, bs, cs;
  for (int t = 0; t < batch; ++t) {
    as.emplace_back(k, m, k + 1);
    bs.emplace_back(k, n, k);
    cs.emplace_back(m, n, m + 1);
  }
  float alpha = 1, beta = 0.5f;
  std::vector<std::vector<double>> want;
  for (int t = 0; t < batch; ++t)
    want.push_back(reference(true, false, m, n, k, 1, as[t], bs[t], 0.5, cs[t]));
  void **pa = upload_pointers(matrices_on_device(as)), **pb = upload_pointers(matrices_on_device(bs));
  void **pc = upload_pointers(matrices_on_device(cs));
  CUBLAS(cublasGemmBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, pa, CUDA_R_16F, k + 1,
                             pb, CUDA_R_16F, k, &beta, pc, CUDA_R_16F, m + 1, batch,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  for (int t = 0; t < batch; ++t) expect_matrix("gemm batched ex f16", cs[t], want[t]);

  std::vector<Matrix<float>> fa, fb, fc;
  for (int t = 0; t < batch; ++t) {
    fa.emplace_back(m, k, m);
    fb.emplace_back(n, k, n + 2);
    fc.emplace_back(m, n, m);
  }
  float two = 2, zero = 0;
  std::vector<std::vector<double>> fwant;
  for (int t = 0; t < batch; ++t)
    fwant.push_back(reference(false, true, m, n, k, 2, fa[t], fb[t], 0, fc[t]));
  float **qa = (float **)upload_pointers(matrices_on_device(fa));
  float **qb = (float **)upload_pointers(matrices_on_device(fb));
  float **qc = (float **)upload_pointers(matrices_on_device(fc));
  CUBLAS(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &two, qa, m, qb, n + 2, &zero,
                            qc, m, batch));
  for (int t = 0; t < batch; ++t) expect_matrix("sgemm batched", fc[t], fwant[t]);
}

static void device_pointer_mode(cublasHandle_t h) {
  const int m = 9, n = 3, k = 4;
  Matrix<float> a(m, k, m), b(k, n, k), c(m, n, m);
  float scalars[2] = {-0.5f, 1.0f}, *d_scalars;
  CHECK(cudaMalloc(&d_scalars, sizeof scalars));
  CHECK(cudaMemcpy(d_scalars, scalars, sizeof scalars, cudaMemcpyHostToDevice));
  auto want = reference(false, false, m, n, k, -0.5, a, b, 1.0, c);
  CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, d_scalars, a.dev, m, b.dev, k, d_scalars + 1, c.dev, m));
  CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  CHECK(cudaDeviceSynchronize());
  expect_matrix("sgemm device pointer mode", c, want);
}

static void level2(cublasHandle_t h) {
  const int m = 7, n = 5;
  for (int x = 0; x < 2; ++x) {
    bool t = x == 1;
    Matrix<float> a(m, n, m + 2), xv(1, (t ? m : n) * 2, 1), yv(1, t ? n : m, 1);
    float alpha = 1.5f, beta = -0.5f;
    std::vector<double> want(yv.host.size());
    int lx = t ? m : n, ly = t ? n : m;
    for (int i = 0; i < ly; ++i) {
      double sum = 0;
      for (int p = 0; p < lx; ++p)   // incx 2; incy -1: y element i is y[ly - 1 - i]
        sum += (t ? a.at(0, p, i) : a.at(0, i, p)) * xv.at(0, 0, 2 * p);
      want[ly - 1 - i] = 1.5 * sum - 0.5 * yv.at(0, 0, ly - 1 - i);
    }
    CUBLAS(cublasSgemv(h, t ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, &alpha, a.dev, a.ld, xv.dev, 2, &beta, yv.dev, -1));
    expect_matrix(t ? "sgemv T" : "sgemv N", yv, want);
  }
  Matrix<double> a(m, n, m), xv(1, n, 1), yv(1, m, 1);
  for (auto &v : yv.host) v = NAN;
  yv.upload();
  double one = 1, zero = 0;
  std::vector<double> want(m);
  for (int i = 0; i < m; ++i) {
    want[i] = 0;
    for (int p = 0; p < n; ++p) want[i] += a.at(0, i, p) * xv.at(0, 0, p);
  }
  CUBLAS(cublasDgemv(h, CUBLAS_OP_N, m, n, &one, a.dev, m, xv.dev, 1, &zero, yv.dev, 1));
  expect_matrix("dgemv beta 0 over NaN", yv, want);
}

static void geams(cublasHandle_t h) {
  const int m = 6, n = 9;
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y) {
      bool ta = x, tb = y;
      Matrix<float> a(ta ? n : m, ta ? m : n, (ta ? n : m) + 1), b(tb ? n : m, tb ? m : n, tb ? n : m);
      Matrix<float> c(m, n, m + 3);
      float alpha = 0.5f, beta = -2;
      std::vector<double> want(c.host.begin(), c.host.end());
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i)
          want[i + (size_t)j * c.ld] = 0.5 * op_at(a, 0, ta, i, j) - 2 * op_at(b, 0, tb, i, j);
      CUBLAS(cublasSgeam(h, OPS[x], OPS[y], m, n, &alpha, a.dev, a.ld, &beta, b.dev, b.ld, c.dev, c.ld));
      char label[32];
      snprintf(label, sizeof label, "sgeam %c%c", OP_NAMES[x], OP_NAMES[y]);
      expect_matrix(label, c, want);
    }
  Matrix<double> a(m, n, m + 1), b(n, m, n);
  double one = 1, three = 3;
  std::vector<double> want(a.host.begin(), a.host.end());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) want[i + (size_t)j * a.ld] = a.at(0, i, j) + 3 * b.at(0, j, i);
  CUBLAS(cublasDgeam(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, &one, a.dev, a.ld, &three, b.dev, n, a.dev, a.ld));
  expect_matrix("dgeam in place (C = A)", a, want);
}

static void level1(cublasHandle_t h) {
  Matrix<float> x(1, 21, 1);
  x.host[8] = 3;
  x.host[14] = -3;
  x.upload();
  float asum = 0;
  int index = 0;
  double want = 0;
  for (int i = 0; i < 21; i += 2) want += fabs(x.at(0, 0, i));
  CUBLAS(cublasSasum(h, 11, x.dev, 2, &asum));
  CUBLAS(cublasIsamax(h, 11, x.dev, 2, &index));
  double got = asum;
  expect_close("sasum incx 2", &got, &want, 1, 1e-6);
  printf("isamax incx 2: %d\n", index);   // x[8] is element 5 (1-based), the first of |3|
  require(index == 5, "isamax returns the first largest element's 1-based index");
  Matrix<double> d(1, 5, 1);
  double dsum = 0;
  CUBLAS(cublasDasum(h, 0, d.dev, 1, &dsum));
  CUBLAS(cublasIdamax(h, 0, d.dev, 1, &index));
  printf("dasum, idamax of no elements: %g %d\n", dsum, index);
}

static void bad_arguments(cublasHandle_t h) {
  Matrix<float> a(8, 8, 8), b(8, 8, 8), c(8, 8, 8);
  float one = 1;
  expect_status("sgemm m < 0", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &one, a.dev, 8, b.dev, 8, &one, c.dev, 8),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("sgemm lda < m", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, &one, a.dev, 4, b.dev, 8, &one, c.dev, 8),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("sgemm T lda < k", cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 8, &one, a.dev, 4, b.dev, 8, &one, c.dev, 8),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("sgemm ldc < m", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, &one, a.dev, 8, b.dev, 8, &one, c.dev, 7),
                CUBLAS_STATUS_INVALID_VALUE);
  Matrix<double> dm(8, 8, 8);
  double done = 1;
  expect_status("dgemm ldb < k", cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 4, &done, dm.dev, 2, dm.dev, 3, &done, dm.dev, 2),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("strided batched count < 0",
                cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a.dev, 2, 4, b.dev, 2, 4, &one, c.dev, 2, 4, -1),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("sgemv lda < m", cublasSgemv(h, CUBLAS_OP_T, 8, 4, &one, a.dev, 4, b.dev, 1, &one, c.dev, 1),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("sgeam C = A transposed", cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, &one, a.dev, 8, &one, b.dev, 8, a.dev, 8),
                CUBLAS_STATUS_INVALID_VALUE);
  expect_status("sgeam n < 0", cublasSgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, -4, &one, a.dev, 8, &one, b.dev, 8, c.dev, 8),
                CUBLAS_STATUS_INVALID_VALUE);
  int ione = 1;
  expect_status("gemmex int8 out with 32I", cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 4, &ione, a.dev, CUDA_R_8I, 4, b.dev,
                                                         CUDA_R_8I, 4, &ione, c.dev, CUDA_R_8I, 4, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_NOT_SUPPORTED);
}

// The helpers that move vectors and matrices between host and device: a 5 x 3 tile with
// leading dimensions 7 (host), 6 (device) and 8 (host again); a vector with increments 2 and
// 3, back through the Async form on a stream.
static void set_and_get(cublasHandle_t h) {
  (void)h;
  std::vector<float> a(7 * 3), back(8 * 3, -9.0f), want(8 * 3, -9.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = (float)next_value();
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 5; ++i) want[i + j * 8] = a[i + j * 7];
  float *dev;
  CHECK(cudaMalloc(&dev, 6 * 3 * sizeof(float)));
  CUBLAS(cublasSetMatrix(5, 3, sizeof(float), a.data(), 7, dev, 6));
  CUBLAS(cublasGetMatrix(5, 3, sizeof(float), dev, 6, back.data(), 8));
  expect_equal("set and get matrix", back.data(), want.data(), back.size());

  std::vector<double> x(2 * 6), y(3 * 6, 5.0), wanty(3 * 6, 5.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = next_value();
  for (int i = 0; i < 6; ++i) wanty[3 * i] = x[2 * i];
  double *dv;
  CHECK(cudaMalloc(&dv, 6 * sizeof(double)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CUBLAS(cublasSetVector(6, sizeof(double), x.data(), 2, dv, 1));
  CUBLAS(cublasGetVectorAsync(6, sizeof(double), dv, 1, y.data(), 3, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_equal("set and get vector", y.data(), wanty.data(), y.size());
  CHECK(cudaStreamDestroy(stream));
}

// gemv with incx = 0. cuBLAS's documentation lists it as invalid; NVIDIA's cuBLAS 13 runs it
// (every element of x is x[0]). Either outcome passes, checked: y as computed, or untouched.
static void gemv_increment_zero(cublasHandle_t h) {
  const int m = 5, n = 4;
  Matrix<float> a(m, n, m + 1), x(1, 1, 1), y(1, m, 1);
  float alpha = 0.5f, beta = 2;
  cublasStatus_t s = cublasSgemv(h, CUBLAS_OP_N, m, n, &alpha, a.dev, a.ld, x.dev, 0, &beta, y.dev, 1);
  fprintf(stderr, "note: sgemv incx 0: %s\n", cublasGetStatusName(s));
  std::vector<double> want(y.host.size());
  for (int i = 0; i < m; ++i) {
    double sum = 0;
    for (int p = 0; p < n; ++p) sum += a.at(0, i, p) * x.at(0, 0, 0);
    want[i] = s == CUBLAS_STATUS_SUCCESS ? 0.5 * sum + 2 * y.at(0, 0, i) : y.at(0, 0, i);
  }
  require(s == CUBLAS_STATUS_SUCCESS || s == CUBLAS_STATUS_INVALID_VALUE,
          "sgemv with incx 0 runs or is refused as invalid");
  expect_matrix("sgemv incx 0 (x[0] for every element, or refused)", y, want);
}

int main() {
  cublasHandle_t h;
  expect_status("create", cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  sgemm_transposes(h);
  gemm_scalars(h);
  strided_batches(h);
  half_gemms(h);
  int8_and_tf32(h);
  pointer_arrays(h);
  device_pointer_mode(h);
  level2(h);
  geams(h);
  level1(h);
  bad_arguments(h);
  gemv_increment_zero(h);
  set_and_get(h);
  expect_status("destroy", cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
  return finish();
}
