/* gemm_lanes.c: the lanes kernel's blocking (ptxport/blas/kernels/gemm_lanes.cuh) written by
 * hand in C, for benchmarks/gemm.py: what gcc -O3 -march=native makes of the same shape is
 * what the CPU target's code for that kernel could reach. C = A B, column-major, f32, whole
 * tiles only (m, n multiples of 64, k of 64; else it returns -1 and computes nothing).
 *
 * As in the kernel, a tile is 64 rows x BN columns of C; k is taken in panels of 64: A's
 * 64 x 64 panel packed k-major (as[p][row]), B's 64 x BN panel column-major (bs[j][p]); the
 * tile's column groups of TN multiply out of them with 4 x TN vector accumulators of 16
 * floats (a row panel column is 4 vectors: the kernel's two rows a lane of 32 lanes), one
 * broadcast of B's value a column and k step, and the partial sums wait in cs between
 * panels. Tiles are shared among OpenMP's threads (bench_set_threads). */

#include <string.h>

typedef float v16 __attribute__((vector_size(64)));

#define BM 64
#define BK 64
#define RV (BM / 16)

#define LANES_TILE(BN, TN)                                                                    \
static void tile_##BN##_##TN(int k, const float *a, int lda, const float *b, int ldb,        \
                             float *c, int ldc)                                              \
{                                                                                            \
    static __thread v16 as[BK][RV], cs[BN][RV];                                              \
    static __thread float bs[BN * BK] __attribute__((aligned(64)));                          \
    for (int k0 = 0; k0 < k; k0 += BK) {                                                     \
        for (int p = 0; p < BK; ++p)                                                         \
            memcpy(as[p], a + (long)(k0 + p) * lda, sizeof as[p]);                          \
        for (int j = 0; j < BN; ++j)                                                         \
            memcpy(bs + j * BK, b + (long)j * ldb + k0, BK * sizeof(float));                 \
        for (int g = 0; g < BN; g += TN) {                                                   \
            v16 acc[RV][TN];                                                                 \
            for (int r = 0; r < RV; ++r)                                                     \
                for (int q = 0; q < TN; ++q)                                                 \
                    acc[r][q] = k0 ? cs[g + q][r] : (v16){0};                                \
            const float *bq = bs + g * BK;                                                   \
            _Pragma("GCC unroll 4")                                                          \
            for (int p = 0; p < BK; ++p) {                                                   \
                for (int q = 0; q < TN; ++q) {                                               \
                    const float bv = bq[q * BK + p];                                         \
                    for (int r = 0; r < RV; ++r)                                             \
                        acc[r][q] += as[p][r] * bv;                                          \
                }                                                                            \
            }                                                                                \
            for (int r = 0; r < RV; ++r)                                                     \
                for (int q = 0; q < TN; ++q)                                                 \
                    cs[g + q][r] = acc[r][q];                                                \
        }                                                                                    \
    }                                                                                        \
    for (int j = 0; j < BN; ++j)                                                             \
        memcpy(c + (long)j * ldc, cs[j], sizeof cs[j]);                                      \
}

LANES_TILE(64, 2)
LANES_TILE(64, 4)

/* C = A B with 64 x 64 tiles and `tn` (2 or 4) columns a group; -1 where the sizes are not
 * whole tiles or tn is neither. */
int sgemm_lanes(int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                float *c, int ldc, int tn)
{
    if (m % BM || n % 64 || k % BK || k == 0 || (tn != 2 && tn != 4))
        return -1;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int bn = 0; bn < n; bn += 64)
        for (int bm = 0; bm < m; bm += BM) {
            const float *ab = a + bm, *bb = b + (long)bn * ldb;
            float *cb = c + bm + (long)bn * ldc;
            if (tn == 2)
                tile_64_2(k, ab, lda, bb, ldb, cb, ldc);
            else
                tile_64_4(k, ab, lda, bb, ldb, cb, ldc);
        }
    return 0;
}
