// mma_sync.cu: warp-level matrix multiply-accumulate on tensor cores (PTX mma.sync.aligned,
// ISA 9.7.14.5) through inline PTX, each thread loading and storing its fragment by the
// layouts of "Matrix Fragments for mma.m16n8k16 / mma.m16n8k8 with floating point type".
// One warp (block) per tile; 16-bit inputs are passed as raw bits (f16 or bf16).
//
// mma_m16n8k16_f16_f32(const unsigned short* A, const unsigned short* B, const float* C,
//                      float* D)
// mma_m16n8k16_bf16_f32(...)  as above with bf16 inputs
// mma_m16n8k8_f16_f32(...)    A 16x8, B 8x8
//   launch: grid = (tiles,), block = (32,), dynamic shared = 0
//   tile t: A_t = A[t*16*K ..] (16 x K, row-major), B_t = B[t*K*8 ..] (K x 8, row-major),
//   C_t, D_t = 16 x 8 row-major at t*128; D_t = A_t * B_t + C_t in f32
// mma_m16n8k16_f16_f16(const unsigned short* A, const unsigned short* B,
//                      const unsigned short* C, unsigned short* D)
//   the same with f16 C and D (raw bits)

__device__ __forceinline__ unsigned pack(unsigned short low, unsigned short high)
{
    return (unsigned)low | ((unsigned)high << 16);
}

// A (16 x K) register r holds elements 2r, 2r+1: rows g (r even) or g+8 (r odd), columns
// 2q, 2q+1, plus 8 for r >= 2; B (K x 8) register r: rows 2q, 2q+1 (+8 for r = 1), column g.
template <int K>
__device__ __forceinline__ void load_ab(const unsigned short* a, const unsigned short* b,
                                        unsigned* ra, unsigned* rb)
{
    int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
    for (int r = 0; r < K / 4; r++) {
        int row = g + ((r & 1) ? 8 : 0), col = q * 2 + (r >= 2 ? 8 : 0);
        ra[r] = pack(a[row * K + col], a[row * K + col + 1]);
    }
    for (int r = 0; r < K / 8; r++) {
        int k = q * 2 + (r ? 8 : 0);
        rb[r] = pack(b[k * 8 + g], b[(k + 1) * 8 + g]);
    }
}

// C and D (16 x 8) element i: row g (+8 for i >= 2), column 2q + (i & 1).
__device__ __forceinline__ int cd_index(int i)
{
    int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
    return (g + (i >= 2 ? 8 : 0)) * 8 + q * 2 + (i & 1);
}

#define F32_TILE(NAME, K, TYPE)                                                               \
    extern "C" __global__ void NAME(const unsigned short* A, const unsigned short* B,         \
                                    const float* C, float* D)                                 \
    {                                                                                         \
        int t = blockIdx.x;                                                                   \
        unsigned ra[4], rb[2];                                                                \
        load_ab<K>(A + t * 16 * K, B + t * K * 8, ra, rb);                                    \
        float c[4], d[4];                                                                     \
        for (int i = 0; i < 4; i++)                                                           \
            c[i] = C[t * 128 + cd_index(i)];                                                  \
        MMA_##K(TYPE)                                                                         \
        for (int i = 0; i < 4; i++)                                                           \
            D[t * 128 + cd_index(i)] = d[i];                                                  \
    }

#define MMA_16(TYPE)                                                                          \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 "               \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"        \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),    \
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#define MMA_8(TYPE)                                                                           \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." TYPE "." TYPE ".f32 "                \
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"                       \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]),                                        \
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));

F32_TILE(mma_m16n8k16_f16_f32, 16, "f16")
F32_TILE(mma_m16n8k16_bf16_f32, 16, "bf16")
F32_TILE(mma_m16n8k8_f16_f32, 8, "f16")

extern "C" __global__ void mma_m16n8k16_f16_f16(const unsigned short* A, const unsigned short* B,
                                                const unsigned short* C, unsigned short* D)
{
    int t = blockIdx.x;
    unsigned ra[4], rb[2], rc[2], rd[2];
    load_ab<16>(A + t * 256, B + t * 128, ra, rb);
    for (int r = 0; r < 2; r++)
        rc[r] = pack(C[t * 128 + cd_index(2 * r)], C[t * 128 + cd_index(2 * r + 1)]);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
                 "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
                 : "=r"(rd[0]), "=r"(rd[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                   "r"(rc[0]), "r"(rc[1]));
    for (int r = 0; r < 2; r++) {
        D[t * 128 + cd_index(2 * r)] = (unsigned short)(rd[r] & 0xFFFF);
        D[t * 128 + cd_index(2 * r + 1)] = (unsigned short)(rd[r] >> 16);
    }
}
