// ldmatrix_mma.cu: a warp-level f16 GEMM tile as CUTLASS and Triton write it for sm_80: the
// tile goes to shared memory, ldmatrix loads the mma fragments from it (PTX ISA 9.7.14.5.15),
// mma.sync.aligned.m16n8k16 multiplies (f32 accumulators). 16-bit inputs as raw bits.
//
// ldmatrix_gemm_f16(const unsigned short* A, const unsigned short* Bt, float* D, int K)
//   launch: grid = (tiles,), block = (32,), dynamic shared = 0; K a multiple of 16, <= 64
//   tile t: A_t 16 x K row-major at t*16*K, Bt_t = B_t transposed (8 x K row-major) at t*8*K;
//   D_t = A_t * B_t (16 x 8 row-major at t*128); ldmatrix.x4 for A, .x2 for B
// ldmatrix_trans_gemm_f16(const unsigned short* A, const unsigned short* B, float* D, int K)
//   the same with B_t stored K x 8 row-major, loaded with ldmatrix.x2.trans

__device__ __forceinline__ unsigned smem(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A fragment: lane l gives the address of row (l % 8) + 8 * ((l / 8) & 1), column
// k0 + 8 * (l / 16): matrices (rows 0-7 | 8-15) x (columns k0.. | k0+8..).
__device__ __forceinline__ void load_a(unsigned* a, const unsigned short* sa, int K, int k0)
{
    int l = threadIdx.x;
    int row = (l % 8) + 8 * ((l / 8) & 1), col = k0 + 8 * (l / 16);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(smem(&sa[row * K + col])));
}

__device__ __forceinline__ void store_d(float* D, const float* d)
{
    int l = threadIdx.x, g = l >> 2, q = l & 3;
    for (int i = 0; i < 4; i++)
        D[blockIdx.x * 128 + (g + (i >= 2 ? 8 : 0)) * 8 + q * 2 + (i & 1)] = d[i];
}

extern "C" __global__ void ldmatrix_gemm_f16(const unsigned short* A, const unsigned short* Bt,
                                             float* D, int K)
{
    __shared__ __align__(16) unsigned short sa[16 * 64];
    __shared__ __align__(16) unsigned short sb[8 * 64];
    int t = blockIdx.x, l = threadIdx.x;
    for (int i = l; i < 16 * K; i += 32)
        sa[i] = A[t * 16 * K + i];
    for (int i = l; i < 8 * K; i += 32)
        sb[i] = Bt[t * 8 * K + i];
    __syncthreads();
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a[4], b[2];
        load_a(a, sa, K, k0);
        // B fragment from Bt (rows n, columns k): lanes 0-7 columns k0.., 8-15 k0+8..
        int n = l % 8, col = k0 + 8 * ((l / 8) & 1);
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                     : "=r"(b[0]), "=r"(b[1]) : "r"(smem(&sb[n * K + col])));
        mma16816(d, a, b);
    }
    store_d(D, d);
}

extern "C" __global__ void ldmatrix_trans_gemm_f16(const unsigned short* A,
                                                   const unsigned short* B, float* D, int K)
{
    __shared__ __align__(16) unsigned short sa[16 * 64];
    __shared__ __align__(16) unsigned short sb[64 * 8];
    int t = blockIdx.x, l = threadIdx.x;
    for (int i = l; i < 16 * K; i += 32)
        sa[i] = A[t * 16 * K + i];
    for (int i = l; i < 8 * K; i += 32)
        sb[i] = B[t * 8 * K + i];
    __syncthreads();
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a[4], b[2];
        load_a(a, sa, K, k0);
        // B (rows k, columns n) transposed by ldmatrix: lanes 0-7 rows k0.., 8-15 k0+8..
        int k = k0 + (l % 8) + 8 * ((l / 8) & 1);
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                     : "=r"(b[0]), "=r"(b[1]) : "r"(smem(&sb[k * 8])));
        mma16816(d, a, b);
    }
    store_d(D, d);
}
