// ptxport's BLAS routines besides the GEMM, for GPU devices: cuBLASLt's epilogues, Level 1
// (axpy, scal, dot, nrm2, asum, iamax), gemv and geam. Written once in CUDA C++ and compiled
// by ptxport for the device, as gemm.cu is; ptxport/blas/routines.py launches them.
//
//   ACC_KIND   the precision of the Level 1/2 kernels: 0 float (S routines), 1 double (D).
//              The cuBLASLt kernels (lt_*) are in the float module only (FP32 compute).
//
// Element types of cuBLASLt's matrices and vectors are run-time arguments (kind: 0 f32,
// 2 f16, 3 bf16), so that one compilation serves every combination. Scalars alpha and beta
// come by value, or (pointer non-zero: CUBLAS_POINTER_MODE_DEVICE) from device memory, read
// by the kernel, hence in stream order.

#ifndef ACC_KIND
#define ACC_KIND 0
#endif
#if ACC_KIND == 1
typedef double T;
#else
typedef float T;
#endif

typedef long long i64;

// u16, u32 and the f16/bf16 conversions: elements.cuh (kernel_source puts it in front).

// Element `i` of an array of `kind` (0 f32, 2 f16, 3 bf16) as float, and a float stored there.
__device__ __forceinline__ float load(const void *p, int kind, i64 i) {
  if (kind == 0) return ((const float *)p)[i];
  u16 h = ((const u16 *)p)[i];
  return kind == 2 ? f16_to_f32(h) : bf16_to_f32(h);
}
__device__ __forceinline__ void store(void *p, int kind, i64 i, float v) {
  if (kind == 0) ((float *)p)[i] = v;
  else ((u16 *)p)[i] = kind == 2 ? f32_to_f16(v) : f32_to_bf16(v);
}

template <typename S> __device__ __forceinline__ S scalar(S value, const S *pointer) {
  return pointer ? *pointer : value;
}

// -- cuBLASLt ------------------------------------------------------------------------------------

// cublasLtEpilogue_t values (cublaslt_epilogue.py)
#define EP_RELU 2
#define EP_BIAS 4
#define EP_GELU 32
#define EP_AUX 128
#define EP_DGELU 192
#define EP_DGELU_BGRAD 208
#define SQRT_2_OVER_PI 0.7978845608028654f

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float dgelu(float x) {
  float t = tanhf(SQRT_2_OVER_PI * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * SQRT_2_OVER_PI *
         (1.0f + (float)(3 * 0.044715) * x * x);
}

// A matrix as cuBLASLt lays it out: element (i, j) of batch b.
struct Layout {
  i64 ld, stride;
  int row_major;
};
__device__ __forceinline__ i64 at(Layout l, int i, int j, int b) {
  return (i64)b * l.stride + (l.row_major ? (i64)i * l.ld + j : i + (i64)j * l.ld);
}

// D = epilogue(alpha P + beta C), P the product (f32, m x n column-major, batches m*n apart).
// Thread i of batch blockIdx.y walks row i of D (consecutive threads: consecutive rows, so
// column-major loads coalesce) and so can sum the row for DGELU_BGRAD's bias gradient.
extern "C" __global__ void lt_epilogue(
    int m, int n, const float *prod, float alpha, const float *alpha_p, float beta,
    const float *beta_p, const void *c, int c_kind, i64 c_ld, i64 c_stride, int c_row,
    void *d, int d_kind, i64 d_ld, i64 d_stride, int d_row, int epilogue, void *bias,
    int bias_kind, i64 bias_stride, void *aux, int aux_kind, i64 aux_ld, i64 aux_stride) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (i >= m) return;
  alpha = scalar(alpha, alpha_p);
  beta = scalar(beta, beta_p);
  Layout lc = {c_ld, c_stride, c_row}, ld = {d_ld, d_stride, d_row};
  Layout la = {aux_ld, aux_stride, 0};
  bool dgelu_ep = epilogue == EP_DGELU || epilogue == EP_DGELU_BGRAD;
  bool bias_in = !dgelu_ep && (epilogue & EP_BIAS);
  float bias_i = bias_in ? load(bias, bias_kind, (i64)b * bias_stride + i) : 0.0f;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    float v = alpha * prod[(i64)b * m * n + i + (i64)j * m];
    if (beta != 0.0f) v += beta * load(c, c_kind, at(lc, i, j, b));
    v += bias_i;
    if (dgelu_ep) {
      v *= dgelu(load(aux, aux_kind, at(la, i, j, b)));
      sum += v;
    } else if (epilogue & EP_GELU) {
      if (epilogue & EP_AUX) store(aux, aux_kind, at(la, i, j, b), v);
      v = gelu(v);
    } else if (epilogue & EP_RELU) {
      v = v < 0.0f ? 0.0f : v;   // NaN stays NaN, as numpy's maximum
    }
    store(d, d_kind, at(ld, i, j, b), v);
  }
  if (epilogue == EP_DGELU_BGRAD) store(bias, bias_kind, (i64)b * bias_stride + i, sum);
}

// BGRADA / BGRADB: out[b][r] = sum over p < len of x[b*bs + r*rs + p*ps] (rows of op(A) or
// columns of op(B), the strides worked out by the host from transposes and orders).
extern "C" __global__ void lt_sums(int rows, int len, const void *x, int x_kind, i64 rs,
                                   i64 ps, i64 bs, void *out, int out_kind, i64 out_stride) {
  int r = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (r >= rows) return;
  float sum = 0.0f;
  for (int p = 0; p < len; ++p) sum += load(x, x_kind, (i64)b * bs + (i64)r * rs + (i64)p * ps);
  store(out, out_kind, (i64)b * out_stride + r, sum);
}

// -- Level 1 -------------------------------------------------------------------------------------

// Element i of a BLAS vector of n elements |inc| apart (inc < 0: element 0 is the last).
__device__ __forceinline__ i64 el(int i, int n, int inc) {
  return inc >= 0 ? (i64)i * inc : (i64)(n - 1 - i) * -inc;
}

extern "C" __global__ void axpy(int n, T alpha, const T *alpha_p, const T *x, int incx, T *y,
                                int incy) {
  T a = scalar(alpha, alpha_p);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[el(i, n, incy)] += a * x[el(i, n, incx)];
}

extern "C" __global__ void scal(int n, T alpha, const T *alpha_p, T *x, int incx) {
  T a = scalar(alpha, alpha_p);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[el(i, n, incx)] *= a;
}

#define REDUCE_THREADS 256
#define OP_DOT 0
#define OP_NRM2 1
#define OP_ASUM 2
#define OP_IAMAX 3

// One block of REDUCE_THREADS: each thread sums a strided share, then a tree in shared
// memory. iamax keeps (largest |x|, its first 1-based index); NaN never wins.
extern "C" __global__ void reduce(int op, int n, const T *x, int incx, const T *y, int incy,
                                  T *out, int *index_out) {
  __shared__ T value[REDUCE_THREADS];
  __shared__ int index[REDUCE_THREADS];
  int t = threadIdx.x;
  T acc = 0;
  int best = 0;
  for (int i = t; i < n; i += REDUCE_THREADS) {
    T v = x[el(i, n, incx)];
    if (op == OP_DOT) acc += v * y[el(i, n, incy)];
    else if (op == OP_NRM2) acc += v * v;
    else if (op == OP_ASUM) acc += v < 0 ? -v : v;
    else if ((v < 0 ? -v : v) > acc || (best == 0 && v == v)) {
      acc = v < 0 ? -v : v;   // i rises: the first of equal magnitudes stays
      best = i + 1;
    }
  }
  value[t] = acc;
  index[t] = best;
  __syncthreads();
  for (int half = REDUCE_THREADS / 2; half > 0; half /= 2) {
    if (t < half) {
      if (op != OP_IAMAX) {
        value[t] += value[t + half];
      } else {
        int j = index[t + half];
        T w = value[t + half];
        if (j && (!index[t] || w > value[t] || (w == value[t] && j < index[t]))) {
          value[t] = w;
          index[t] = j;
        }
      }
    }
    __syncthreads();
  }
  if (t == 0) {
    if (op == OP_IAMAX) *index_out = index[0];
    else *out = op == OP_NRM2 ? sqrt(value[0]) : value[0];
  }
}

// -- Level 2 and geam ----------------------------------------------------------------------------

// y = alpha op(A) x + beta y; thread per element of y (y not read when beta is 0).
extern "C" __global__ void gemv(int trans, int m, int n, T alpha, const T *alpha_p, T beta,
                                const T *beta_p, const T *a, int lda, const T *x, int incx,
                                T *y, int incy) {
  int rows = trans ? n : m, len = trans ? m : n;
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  T al = scalar(alpha, alpha_p), be = scalar(beta, beta_p);
  T sum = 0;
  if (al != 0)
    for (int p = 0; p < len; ++p) {
      T e = trans ? a[p + (i64)r * lda] : a[r + (i64)p * lda];
      sum += e * x[el(p, len, incx)];
    }
  T v = al * sum;
  if (be != 0) v += be * y[el(r, rows, incy)];
  y[el(r, rows, incy)] = v;
}

// C = alpha op(A) + beta op(B), m x n; a term whose scalar is 0 is not read.
extern "C" __global__ void geam(int ta, int tb, int m, int n, T alpha, const T *alpha_p,
                                const T *a, int lda, T beta, const T *beta_p, const T *b,
                                int ldb, T *c, int ldc) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  T al = scalar(alpha, alpha_p), be = scalar(beta, beta_p);
  for (int j = blockIdx.y; j < n; j += gridDim.y) {
    T v = 0;
    if (al != 0) v = al * (ta ? a[j + (i64)i * lda] : a[i + (i64)j * lda]);
    if (be != 0) v += be * (tb ? b[j + (i64)i * ldb] : b[i + (i64)j * ldb]);
    c[i + (i64)j * ldc] = v;
  }
}
