// Issue 17's probe: what NVIDIA's cuBLAS 13 answers (and prints: its xerbla lines) for illegal
// arguments of the routines ptxport implements, one line each, to compare with ptxport's
// answers line by line. Not a test: each call's status is printed, whatever it is.
// Labels starting with "? " are calls not yet run with NVIDIA's library (added after the H100's
// run of 2026-11-25): ptxport's answer there is a prediction from the answers seen.
#include <cstdio>
#include <cuda_runtime.h>
#include <cublas_v2.h>

static void show(const char *what, cublasStatus_t s) {
  printf("%s: %s\n", what, cublasGetStatusName(s));
  fflush(stdout);
}

int main() {
  cublasHandle_t h;
  show("create", cublasCreate(&h));
  float *f;
  double *d;
  __half *x;
  void **p;
  cudaMalloc(&f, 1 << 16);
  cudaMalloc(&d, 1 << 16);
  cudaMalloc(&x, 1 << 16);
  cudaMalloc(&p, 1 << 10);
  void *table[8];   // every pointer of a batch names a real matrix: no call may fault
  for (auto &t : table) t = f;
  cudaMemcpy(p, table, sizeof table, cudaMemcpyHostToDevice);
  float one = 1;
  double done = 1;
  __half hone = __float2half(1.0f);
  int i1 = 1;
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  show("sgemm transa 7", cublasSgemm(h, (cublasOperation_t)7, N, 4, 4, 4, &one, f, 4, f, 4, &one, f, 4));
  show("sgemm m -1 and lda 0", cublasSgemm(h, N, N, -1, 4, 4, &one, f, 0, f, 4, &one, f, 4));
  show("sgemm k -1", cublasSgemm(h, N, N, 4, 4, -1, &one, f, 4, f, 4, &one, f, 4));
  show("sgemm ldb < k", cublasSgemm(h, N, N, 4, 4, 8, &one, f, 4, f, 4, &one, f, 4));
  show("sgemm N T ldb < n", cublasSgemm(h, N, T, 4, 8, 4, &one, f, 4, f, 4, &one, f, 4));
  show("dgemm lda < m", cublasDgemm(h, N, N, 8, 4, 4, &done, d, 4, d, 8, &done, d, 8));
  show("dgemm ldb < k", cublasDgemm(h, N, N, 2, 2, 4, &done, d, 2, d, 3, &done, d, 2));
  show("hgemm lda < m", cublasHgemm(h, N, N, 8, 4, 4, &hone, x, 4, x, 8, &hone, x, 8));
  show("sgemm strided lda < m", cublasSgemmStridedBatched(h, N, N, 8, 2, 2, &one, f, 4, 16, f, 8, 16, &one, f, 8, 16, 2));
  show("sgemm strided ldc < m", cublasSgemmStridedBatched(h, N, N, 8, 2, 2, &one, f, 8, 16, f, 8, 16, &one, f, 4, 16, 2));
  show("dgemm strided count < 0", cublasDgemmStridedBatched(h, N, N, 2, 2, 2, &done, d, 2, 4, d, 2, 4, &done, d, 2, 4, -1));
  show("hgemm strided count < 0", cublasHgemmStridedBatched(h, N, N, 2, 2, 2, &hone, x, 2, 4, x, 2, 4, &hone, x, 2, 4, -1));
  show("sgemm batched count < 0", cublasSgemmBatched(h, N, N, 2, 2, 2, &one, (const float **)p, 2, (const float **)p, 2, &one, (float **)p, 2, -1));
  show("sgemm batched lda < m", cublasSgemmBatched(h, N, N, 8, 2, 2, &one, (const float **)p, 4, (const float **)p, 8, &one, (float **)p, 8, 1));
  show("dgemm batched count < 0", cublasDgemmBatched(h, N, N, 2, 2, 2, &done, (const double **)p, 2, (const double **)p, 2, &done, (double **)p, 2, -1));
  show("gemmex lda < m", cublasGemmEx(h, N, N, 8, 4, 4, &one, f, CUDA_R_32F, 4, f, CUDA_R_32F, 8, &one, f, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  show("gemmex ldc < m", cublasGemmEx(h, N, N, 8, 4, 4, &one, f, CUDA_R_32F, 8, f, CUDA_R_32F, 8, &one, f, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  show("gemmex m -1", cublasGemmEx(h, N, N, -1, 4, 4, &one, f, CUDA_R_32F, 8, f, CUDA_R_32F, 8, &one, f, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  show("gemmex bad types and lda < m", cublasGemmEx(h, N, N, 8, 4, 4, &i1, f, CUDA_R_8I, 4, f, CUDA_R_8I, 8, &i1, f, CUDA_R_8I, 8, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
  show("gemm strided ex count < 0", cublasGemmStridedBatchedEx(h, N, N, 2, 2, 2, &one, f, CUDA_R_32F, 2, 4, f, CUDA_R_32F, 2, 4, &one, f, CUDA_R_32F, 2, 4, -1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  show("gemm strided ex lda < m", cublasGemmStridedBatchedEx(h, N, N, 8, 2, 2, &one, f, CUDA_R_32F, 4, 16, f, CUDA_R_32F, 8, 16, &one, f, CUDA_R_32F, 8, 16, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  show("gemm batched ex count < 0", cublasGemmBatchedEx(h, N, N, 2, 2, 2, &one, (const void **)p, CUDA_R_32F, 2, (const void **)p, CUDA_R_32F, 2, &one, p, CUDA_R_32F, 2, -1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  show("gemm batched ex ldb < k", cublasGemmBatchedEx(h, N, N, 2, 2, 8, &one, (const void **)p, CUDA_R_32F, 2, (const void **)p, CUDA_R_32F, 4, &one, p, CUDA_R_32F, 2, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  // predictions: the batched Ex forms number as GemmEx; arguments, then types, then the count
  const cudaDataType R32 = CUDA_R_32F, I8 = CUDA_R_8I;
  const cublasComputeType_t C32 = CUBLAS_COMPUTE_32F, C32I = CUBLAS_COMPUTE_32I;
  const cublasGemmAlgo_t DEF = CUBLAS_GEMM_DEFAULT;
  show("? gemm strided ex ldb < k", cublasGemmStridedBatchedEx(h, N, N, 2, 2, 8, &one, f, R32, 2, 16, f, R32, 4, 16, &one, f, R32, 2, 16, 1, C32, DEF));
  show("? gemm strided ex ldc < m", cublasGemmStridedBatchedEx(h, N, N, 8, 2, 2, &one, f, R32, 8, 16, f, R32, 2, 16, &one, f, R32, 4, 16, 1, C32, DEF));
  show("? gemm strided ex count < 0 and lda < m", cublasGemmStridedBatchedEx(h, N, N, 8, 2, 2, &one, f, R32, 4, 16, f, R32, 2, 16, &one, f, R32, 8, 16, -1, C32, DEF));
  show("? gemm strided ex bad types and count < 0", cublasGemmStridedBatchedEx(h, N, N, 2, 2, 2, &i1, f, I8, 2, 4, f, I8, 2, 4, &i1, f, I8, 2, 4, -1, C32I, DEF));
  show("? gemm strided ex m 0 and count < 0", cublasGemmStridedBatchedEx(h, N, N, 0, 2, 2, &one, f, R32, 2, 4, f, R32, 2, 4, &one, f, R32, 2, 4, -1, C32, DEF));
  show("? gemmex bad types", cublasGemmEx(h, N, N, 8, 4, 4, &i1, f, I8, 8, f, I8, 8, &i1, f, I8, 8, C32I, DEF));
  show("? gemm batched ex bad types and ldb < k", cublasGemmBatchedEx(h, N, N, 2, 2, 8, &i1, (const void **)p, I8, 2, (const void **)p, I8, 4, &i1, p, I8, 2, 1, C32I, DEF));
  show("? sgemm batched count < 0 and ldc < m", cublasSgemmBatched(h, N, N, 8, 2, 2, &one, (const float **)p, 8, (const float **)p, 2, &one, (float **)p, 4, -1));
  show("sgeam transa 7", cublasSgeam(h, (cublasOperation_t)7, N, 4, 4, &one, f, 4, &one, f, 4, f + 64, 4));
  show("sgeam m -1", cublasSgeam(h, N, N, -1, 4, &one, f, 4, &one, f, 4, f + 64, 4));
  show("sgeam lda < m", cublasSgeam(h, N, N, 8, 4, &one, f, 4, &one, f, 8, f + 64, 8));
  show("sgeam ldb < m", cublasSgeam(h, N, N, 8, 4, &one, f, 8, &one, f, 4, f + 64, 8));
  show("sgeam ldc < m", cublasSgeam(h, N, N, 8, 4, &one, f, 8, &one, f, 8, f + 64, 4));
  show("dgeam n -1", cublasDgeam(h, N, N, 4, -1, &done, d, 4, &done, d, 4, d + 64, 4));
  show("sgemv m -1", cublasSgemv(h, N, -1, 4, &one, f, 4, f, 1, &one, f + 64, 1));
  show("sgemv trans 7", cublasSgemv(h, (cublasOperation_t)7, 4, 4, &one, f, 4, f, 1, &one, f + 64, 1));
  show("sgemv incy 0", cublasSgemv(h, N, 4, 4, &one, f, 4, f, 1, &one, f + 64, 0));
  show("? sgemv n -1", cublasSgemv(h, N, 4, -1, &one, f, 4, f, 1, &one, f + 64, 1));
  show("? sgemv lda < m", cublasSgemv(h, N, 8, 4, &one, f, 4, f, 1, &one, f + 64, 1));
  show("dgemv incx 0", cublasDgemv(h, N, 4, 4, &done, d, 4, d, 0, &done, d + 64, 1));
  float r;
  int ir;
  show("sdot n -1", cublasSdot(h, -1, f, 1, f, 1, &r));
  show("snrm2 incx 0", cublasSnrm2(h, 4, f, 0, &r));
  show("saxpy incx 0", cublasSaxpy(h, 4, &one, f, 0, f + 64, 1));
  show("isamax incx -1", cublasIsamax(h, 4, f, -1, &ir));
  float host[64] = {0};
  show("setvector incx 0", cublasSetVector(4, 4, host, 0, f, 1));
  show("setvector elemsize 0", cublasSetVector(4, 0, host, 1, f, 1));
  show("setmatrix lda 0", cublasSetMatrix(4, 4, 4, host, 0, f, 4));
  show("setmatrix rows > lda", cublasSetMatrix(8, 4, 4, host, 4, f, 8));
  show("getmatrix rows -1", cublasGetMatrix(-1, 4, 4, f, 4, host, 4));
  show("set math mode 99", cublasSetMathMode(h, (cublasMath_t)99));
  show("set pointer mode 7", cublasSetPointerMode(h, (cublasPointerMode_t)7));
  cudaDeviceSynchronize();
  show("destroy", cublasDestroy(h));
  return 0;
}
