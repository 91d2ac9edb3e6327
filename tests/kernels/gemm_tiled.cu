// gemm_tiled.cu: C = alpha * A @ B + beta * C with 16x16 shared-memory tiles, row-major
// matrices (A is M x K, B is K x N, C is M x N). The tile loop lives in one C++ template;
// two extern "C" kernels use it for float and double, and the template kernel itself is
// explicitly instantiated, so the PTX also holds mangled entry names.
//
// sgemm_tiled(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
//             float* C)
//   launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16), dynamic shared = 0
//   C[r][c] = alpha * sum_k A[r][k] * B[k][c] + beta * C[r][c], the sum accumulated in k
//   order with fmas (compare with a relative tolerance of ~1e-5 for float)
// dgemm_tiled(int M, int N, int K, double alpha, const double* A, const double* B, double beta,
//             double* C)
//   launch: as sgemm_tiled; double precision
// gemm_tiled_t<float> / gemm_tiled_t<double>, mangled
//   _Z12gemm_tiled_tIfEviiiT_PKS0_S2_S0_PS0_ and _Z12gemm_tiled_tIdEviiiT_PKS0_S2_S0_PS0_
//   (int M, int N, int K, T alpha, const T* A, const T* B, T beta, T* C)
//   launch and result: as sgemm_tiled / dgemm_tiled

#define TILE 16

template <typename T>
__device__ __forceinline__ void gemm_tile_loop(int M, int N, int K, T alpha, const T* A,
                                               const T* B, T beta, T* C)
{
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    T acc = 0;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = row < M && ka < K ? A[row * K + ka] : T(0);
        Bs[threadIdx.y][threadIdx.x] = kb < K && col < N ? B[kb * N + col] : T(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A,
                                       const float* B, float beta, float* C)
{
    gemm_tile_loop<float>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void dgemm_tiled(int M, int N, int K, double alpha, const double* A,
                                       const double* B, double beta, double* C)
{
    gemm_tile_loop<double>(M, N, K, alpha, A, B, beta, C);
}

template <typename T>
__global__ void gemm_tiled_t(int M, int N, int K, T alpha, const T* A, const T* B, T beta, T* C)
{
    gemm_tile_loop<T>(M, N, K, alpha, A, B, beta, C);
}

template __global__ void gemm_tiled_t<float>(int, int, int, float, const float*, const float*,
                                             float, float*);
template __global__ void gemm_tiled_t<double>(int, int, int, double, const double*,
                                              const double*, double, double*);
