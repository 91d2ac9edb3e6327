/* cuBLAS's v2 API as far as ptxport's libcublas.so.13 implements it: the types, constants
 * and prototypes of NVIDIA's cublas_api.h for those functions (same names, values and
 * symbols, so a program built against this header runs with NVIDIA's library too), and the
 * macros that select the _v2 symbols. For building programs where NVIDIA's cuBLAS headers
 * are not installed; a program built with NVIDIA's headers runs on ptxport's library alike.
 */
#ifndef PTXPORT_CUBLAS_V2_H
#define PTXPORT_CUBLAS_V2_H

#include <stddef.h>
#include <cuda_runtime.h>
#include <library_types.h>
#include <cuda_fp16.h>

#define CUBLAS_VER_MAJOR 13
#define CUBLAS_VER_MINOR 0
#define CUBLAS_VER_PATCH 2
#define CUBLAS_VERSION (CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100 + CUBLAS_VER_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

/* cuBLAS's own name for CUDA's data types (NVIDIA's cublas_api.h; llm.c's matmul.cuh uses it) */
typedef cudaDataType cublasDataType_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef enum { CUBLAS_ATOMICS_NOT_ALLOWED = 0, CUBLAS_ATOMICS_ALLOWED = 1 } cublasAtomicsMode_t;
typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
    CUBLAS_FP32_EMULATED_BF16X9_MATH = 4,
    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16
} cublasMath_t;
typedef enum {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_16F_PEDANTIC = 65,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_64F_PEDANTIC = 71,
    CUBLAS_COMPUTE_32I = 72,
    CUBLAS_COMPUTE_32I_PEDANTIC = 73
} cublasComputeType_t;
typedef enum {
    CUBLAS_GEMM_DEFAULT = -1,
    CUBLAS_GEMM_DFALT = -1,
    CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99,
    CUBLAS_GEMM_DFALT_TENSOR_OP = 99
} cublasGemmAlgo_t;

struct cublasContext;
typedef struct cublasContext *cublasHandle_t;

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle);
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version);
cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value);
size_t cublasGetCudartVersion(void);
const char *cublasGetStatusName(cublasStatus_t status);
const char *cublasGetStatusString(cublasStatus_t status);
void cublasXerbla(const char *srName, int info);
cublasStatus_t cublasSetVector(int n, int elemSize, const void *x, int incx, void *devicePtr,
                               int incy);
cublasStatus_t cublasGetVector(int n, int elemSize, const void *x, int incx, void *y, int incy);
cublasStatus_t cublasSetMatrix(int rows, int cols, int elemSize, const void *A, int lda, void *B,
                               int ldb);
cublasStatus_t cublasGetMatrix(int rows, int cols, int elemSize, const void *A, int lda, void *B,
                               int ldb);
cublasStatus_t cublasSetVectorAsync(int n, int elemSize, const void *hostPtr, int incx,
                                    void *devicePtr, int incy, cudaStream_t stream);
cublasStatus_t cublasGetVectorAsync(int n, int elemSize, const void *devicePtr, int incx,
                                    void *hostPtr, int incy, cudaStream_t stream);
cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elemSize, const void *A, int lda,
                                    void *B, int ldb, cudaStream_t stream);
cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elemSize, const void *A, int lda,
                                    void *B, int ldb, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                     size_t workspaceSizeInBytes);
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId);
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode);
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode);
cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode);
cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);

cublasStatus_t cublasSnrm2_v2(cublasHandle_t handle, int n, const float *x, int incx,
                              float *result);
cublasStatus_t cublasDnrm2_v2(cublasHandle_t handle, int n, const double *x, int incx,
                              double *result);
cublasStatus_t cublasSdot_v2(cublasHandle_t handle, int n, const float *x, int incx,
                             const float *y, int incy, float *result);
cublasStatus_t cublasDdot_v2(cublasHandle_t handle, int n, const double *x, int incx,
                             const double *y, int incy, double *result);
cublasStatus_t cublasSscal_v2(cublasHandle_t handle, int n, const float *alpha, float *x,
                              int incx);
cublasStatus_t cublasDscal_v2(cublasHandle_t handle, int n, const double *alpha, double *x,
                              int incx);
cublasStatus_t cublasSaxpy_v2(cublasHandle_t handle, int n, const float *alpha,
                              const float *x, int incx, float *y, int incy);
cublasStatus_t cublasDaxpy_v2(cublasHandle_t handle, int n, const double *alpha,
                              const double *x, int incx, double *y, int incy);

cublasStatus_t cublasSasum_v2(cublasHandle_t handle, int n, const float *x, int incx,
                              float *result);
cublasStatus_t cublasDasum_v2(cublasHandle_t handle, int n, const double *x, int incx,
                              double *result);
cublasStatus_t cublasIsamax_v2(cublasHandle_t handle, int n, const float *x, int incx,
                               int *result);
cublasStatus_t cublasIdamax_v2(cublasHandle_t handle, int n, const double *x, int incx,
                               int *result);

cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                              const float *alpha, const float *A, int lda, const float *x,
                              int incx, const float *beta, float *y, int incy);
cublasStatus_t cublasDgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                              const double *alpha, const double *A, int lda, const double *x,
                              int incx, const double *beta, double *y, int incy);
cublasStatus_t cublasSgeam(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, const float *alpha,
                           const float *A, int lda, const float *beta, const float *B, int ldb,
                           float *C, int ldc);
cublasStatus_t cublasDgeam(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, const double *alpha,
                           const double *A, int lda, const double *beta, const double *B,
                           int ldb, double *C, int ldc);

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const __half *alpha,
                           const __half *A, int lda, const __half *B, int ldb,
                           const __half *beta, __half *C, int ldc);
cublasStatus_t cublasHgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const __half *alpha, const __half *A, int lda, long long int strideA,
    const __half *B, int ldb, long long int strideB, const __half *beta, __half *C, int ldc,
    long long int strideC, int batchCount);
cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n, int k,
                                  const float *alpha, const float *const Aarray[], int lda,
                                  const float *const Barray[], int ldb, const float *beta,
                                  float *const Carray[], int ldc, int batchCount);
cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n, int k,
                                  const double *alpha, const double *const Aarray[], int lda,
                                  const double *const Barray[], int ldb, const double *beta,
                                  double *const Carray[], int ldc, int batchCount);
cublasStatus_t cublasHgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n, int k,
                                  const __half *alpha, const __half *const Aarray[], int lda,
                                  const __half *const Barray[], int ldb, const __half *beta,
                                  __half *const Carray[], int ldc, int batchCount);
cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void *alpha, const void *const Aarray[], cudaDataType Atype, int lda,
    const void *const Barray[], cudaDataType Btype, int ldb, const void *beta,
    void *const Carray[], cudaDataType Ctype, int ldc, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo);

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B,
                              int ldb, const float *beta, float *C, int ldc);
cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const double *alpha, const double *A, int lda, const double *B,
                              int ldb, const double *beta, double *C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const float *alpha, const float *A, int lda, long long int strideA, const float *B,
    int ldb, long long int strideB, const float *beta, float *C, int ldc,
    long long int strideC, int batchCount);
cublasStatus_t cublasDgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const double *alpha, const double *A, int lda, long long int strideA,
    const double *B, int ldb, long long int strideB, const double *beta, double *C, int ldc,
    long long int strideC, int batchCount);
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
    long long int strideA, const void *B, cudaDataType Btype, int ldb, long long int strideB,
    const void *beta, void *C, cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo);

#ifdef __cplusplus
}
#endif

#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasGetVersion cublasGetVersion_v2
#define cublasSetWorkspace cublasSetWorkspace_v2
#define cublasSetStream cublasSetStream_v2
#define cublasGetStream cublasGetStream_v2
#define cublasGetPointerMode cublasGetPointerMode_v2
#define cublasSetPointerMode cublasSetPointerMode_v2
#define cublasSnrm2 cublasSnrm2_v2
#define cublasDnrm2 cublasDnrm2_v2
#define cublasSdot cublasSdot_v2
#define cublasDdot cublasDdot_v2
#define cublasSscal cublasSscal_v2
#define cublasDscal cublasDscal_v2
#define cublasSaxpy cublasSaxpy_v2
#define cublasDaxpy cublasDaxpy_v2
#define cublasSgemm cublasSgemm_v2
#define cublasSasum cublasSasum_v2
#define cublasDasum cublasDasum_v2
#define cublasIsamax cublasIsamax_v2
#define cublasIdamax cublasIdamax_v2
#define cublasSgemv cublasSgemv_v2
#define cublasDgemv cublasDgemv_v2
#define cublasDgemm cublasDgemm_v2

#endif
