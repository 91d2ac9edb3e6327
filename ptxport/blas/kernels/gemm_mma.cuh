// The portable GEMM's tensor-core kernels' shared part and the mma.sync kernel (GEMM_MMA 1);
// ptxport/blas/portable.py appends this file to gemm.cu (whose macros, types, store_c and
// block_tile it uses) for GEMM_MMA 1 and 2, and gemm_wgmma.cu after it for 2.
#if GEMM_MMA
// -- the tensor-core kernel -------------------------------------------------------------------
// (its helpers up to ldmatrix serve gemm_wgmma.cu's warpgroup kernel too, GEMM_MMA 2)
// WM x WN warps; warp (wm, wn) computes the (BM / WM) x (BN / WN) part of the block tile as
// MT x NTL tiles of mma.sync.m16n8k16 (f32 accumulators). Shared tiles keep the stored
// matrices' contiguous dimension (k for op(A) transposed / op(B) not, rows of A or columns of
// B otherwise) in 16-byte chunks of 8 elements, so that global memory is copied to them
// unchanged: with cp.async (VEC: 16-byte aligned) in a STAGES-deep pipeline, else element by
// element with zero fill. ldmatrix.x4 gathers the mma fragments, with .trans where the tile
// holds the other dimension contiguous. Chunks are placed XOR-swizzled in their row (swz) so
// that the 8 rows an ldmatrix matrix reads fall in 8 different bank groups.
// Fragment layouts: PTX ISA 9.7.14.5.8 (m16n8k16 .f16 / .bf16), 9.7.14.5.15 (ldmatrix).

#ifndef STAGES
#define STAGES 3
#endif
#if AHEAD && BK % 32 != 0
#error "AHEAD (mma): BK must be a multiple of 32 (the fragments' two buffers alternate)"
#endif

#define NTHREADS (WM * WN * (GEMM_MMA == 2 ? 128 : 32))   // (wgmma: warpgroups of 4 warps)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MT (WTM / 16)
#define NTL (WTN / 8)
#define A_CHUNKS (BM * BK / 8 / NTHREADS)   // 8-element chunks each thread moves a k-step
#define B_CHUNKS (BN * BK / 8 / NTHREADS)
#define A_TILE (BM * BK)                    // elements of one stage's A tile
#define STAGE_ELEMS ((BM + BN) * BK)

struct Chunk { u16 v[8]; };

// The element offset of chunk `c` (8 elements along the contiguous dimension) of row `r` in
// a tile whose rows hold `cpr` chunks: the chunk index is XORed with bits of the row so that
// the same chunk of 8 consecutive rows lands in 8 different 16-byte bank groups.
__device__ __forceinline__ int swz(int r, int c, int cpr) {
  const int f = cpr >= 8 ? (r & 7) : ((r / (8 / cpr)) & (cpr - 1));
  return (r * cpr + (c ^ f)) * 8;
}

// The same for the warpgroup kernel's tiles (GEMM_MMA 2), whose 128-byte swizzle the tensor
// cores undo: chunk c of row `row` in blocks of 64 elements along the row (MN-major tiles
// wider than 64), BK rows each, at chunk c ^ (row % 8) of its 128-byte row.
__device__ __forceinline__ int wg_swz(int row, int c) {
  return (c >> 3) * (BK * 64) + row * 64 + ((c & 7) ^ (row & 7)) * 8;
}

// Where load_stage puts chunk c of tile row r (rows of `cpr` chunks): swz, or wg_swz.
__device__ __forceinline__ int chunk_at(int r, int c, int cpr) {
  return GEMM_MMA == 2 ? wg_swz(r, c) : swz(r, c, cpr);
}

__device__ __forceinline__ u32 shared_address(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}

// One 16-byte chunk from global to shared memory: cp.async of its `bytes` valid bytes
// (the rest zero-filled), or element-wise where the data are not 16-byte aligned.
__device__ __forceinline__ void copy_chunk(u16 *dst, const In *src, int valid, bool inside) {
#if EVEN
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
               :: "r"(shared_address(dst)), "l"(src));
#elif VEC
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(shared_address(dst)), "l"(src), "r"(inside ? min(valid, 8) * 2 : 0));
#else
  Chunk v;
#pragma unroll
  for (int x = 0; x < 8; ++x) v.v[x] = inside && x < valid ? src[x] : (u16)0;
  *(uint4 *)dst = *(uint4 *)v.v;
#endif
}

// Stage `st`'s tiles for the k-step at k0. A's tile is BM x BK as [i][p] (k contiguous) when
// op(A) is transposed, else [p][i]; B's is BN x BK as [j][p] when op(B) is not transposed,
// else [p][j]. Without VEC the strided element loads follow the same chunk order.
__device__ __forceinline__ void load_stage(u16 *smem, int st, const In *a, int lda,
                                           const In *b, int ldb, int m, int n, int k, int bm,
                                           int bn, int k0, int t, int trans) {
  u16 *as = smem + st * STAGE_ELEMS, *bs = as + A_TILE;
#pragma unroll
  for (int x = 0; x < A_CHUNKS; ++x) {
    const int e = t + x * NTHREADS;
    if (TA) {   // rows i, chunks along k
      const int i = e / (BK / 8), c = e % (BK / 8), gi = bm + i, gp = k0 + c * 8;
      copy_chunk(as + chunk_at(i, c, BK / 8), a + gp + (long long)gi * lda, k - gp,
                 gi < m && gp < k);
    } else {    // rows p, chunks along i
      const int p = e / (BM / 8), c = e % (BM / 8), gi = bm + c * 8, gp = k0 + p;
      copy_chunk(as + chunk_at(p, c, BM / 8), a + gi + (long long)gp * lda, m - gi,
                 gp < k && gi < m);
    }
  }
#pragma unroll
  for (int x = 0; x < B_CHUNKS; ++x) {
    const int e = t + x * NTHREADS;
    if (TB) {   // rows p, chunks along j
      const int p = e / (BN / 8), c = e % (BN / 8), gj = bn + c * 8, gp = k0 + p;
      copy_chunk(bs + chunk_at(p, c, BN / 8), b + gj + (long long)gp * ldb, n - gj,
                 gp < k && gj < n);
    } else {    // rows j, chunks along k
      const int j = e / (BK / 8), c = e % (BK / 8), gj = bn + j, gp = k0 + c * 8;
      copy_chunk(bs + chunk_at(j, c, BK / 8), b + gp + (long long)gj * ldb, k - gp,
                 gj < n && gp < k);
    }
  }
}

__device__ __forceinline__ void ldmatrix_x4(u32 *r, const u16 *p, bool trans) {
  if (trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
}

#if IN_KIND == 3
#define MMA_IN "bf16"
#else
#define MMA_IN "f16"
#endif
__device__ __forceinline__ void mma_16816(float *d, const u32 *fa, const u32 *fb) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_IN "." MMA_IN ".f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
}

// The warp's fragments of one k-step of 16 from stage tiles `as`, `bs`: lane l addresses
// row l % 8 of matrix l / 8 of each ldmatrix.x4. A's four matrices are a0..a3 of the
// fragment (rows +0/+8, k +0/+8); B's are b0, b1 of n-tile y and of y + 1.
__device__ __forceinline__ void load_fragments(u32 (*fa)[4], u32 (*fb)[2], const u16 *as,
                                               const u16 *bs, int kk, int wm, int wn,
                                               int lane, int trans) {
  const int q = lane / 8, r = lane % 8;
#pragma unroll
  for (int x = 0; x < MT; ++x) {
    const int i = wm * WTM + x * 16 + (q & 1) * 8, p = kk + (q >> 1) * 8;
    if (TA) ldmatrix_x4(fa[x], as + swz(i + r, p / 8, BK / 8), false);
    else ldmatrix_x4(fa[x], as + swz(p + r, i / 8, BM / 8), true);
  }
#pragma unroll
  for (int y = 0; y < NTL; y += 2) {
    const int j = wn * WTN + y * 8 + (q >> 1) * 8, p = kk + (q & 1) * 8;
    u32 v[4];
    if (TB) ldmatrix_x4(v, bs + swz(p + r, j / 8, BN / 8), true);
    else ldmatrix_x4(v, bs + swz(j + r, p / 8, BK / 8), false);
    fb[y][0] = v[0]; fb[y][1] = v[1]; fb[y + 1][0] = v[2]; fb[y + 1][1] = v[3];
  }
}

__device__ __forceinline__ void multiply(float (*acc)[NTL][4], const u32 (*fa)[4],
                                         const u32 (*fb)[2]) {
#pragma unroll
  for (int x = 0; x < MT; ++x)
#pragma unroll
    for (int y = 0; y < NTL; ++y) mma_16816(acc[x][y], fa[x], fb[y]);
}

#if GEMM_MMA == 1
extern "C" __global__ void __launch_bounds__(NTHREADS)
ptxport_gemm(int m, int n, int k, float alpha, const In *a, int lda, long long stride_a,
             const In *b, int ldb, long long stride_b, float beta, Out *c, int ldc,
             long long stride_c, int trans) {
  // STAGES x (A tile, B tile): the host passes their size as the launch's dynamic shared memory
  extern __shared__ __align__(128) u16 smem[];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int wm = warp % WM, wn = warp / WM, g = lane / 4, tig = lane % 4;
  int tile_m, tile_n;
  block_tile(tile_m, tile_n);
  const int bm = tile_m * BM, bn = tile_n * BN;
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;

  const float zero = (float)(m < 0);   // not a constant: see the SIMT kernel
  float acc[MT][NTL][4];
#pragma unroll
  for (int x = 0; x < MT; ++x)
#pragma unroll
    for (int y = 0; y < NTL; ++y)
#pragma unroll
      for (int z = 0; z < 4; ++z) acc[x][y][z] = zero;

  // k-step kt lives in stage kt % STAGES; STAGES - 1 steps are in flight while one is
  // multiplied. Every step commits one cp.async group (empty past the end) so that
  // wait_group STAGES - 2 always means "step kt has landed".
  const int steps = (k + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) load_stage(smem, s, a, lda, b, ldb, m, n, k, bm, bn, s * BK, t, trans);
    asm volatile("cp.async.commit_group;");
  }
#if AHEAD
  // fragments double-buffered in registers: kk + 16's read while kk's are multiplied; the
  // next stage's first ones right after the barrier that ends a k-step, before its last
  // mmas (so the barrier's wait and the ldmatrix latency hide behind them). Stage kt - 1 is
  // refilled at kk 0 of step kt: every warp read its last fragments before that barrier.
  u32 fa[2][MT][4], fb[2][NTL][2];
  asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2));
  __syncthreads();
  load_fragments(fa[0], fb[0], smem, smem + A_TILE, 0, wm, wn, lane, trans);
  for (int kt = 0; kt < steps; ++kt) {
    const u16 *as = smem + (kt % STAGES) * STAGE_ELEMS, *bs = as + A_TILE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      const int cur = kk / 16 % 2;
      if (kk == 0) {   // the copies of step kt + STAGES - 1
        const int next = kt + STAGES - 1;
        if (next < steps)
          load_stage(smem, next % STAGES, a, lda, b, ldb, m, n, k, bm, bn, next * BK, t, trans);
        asm volatile("cp.async.commit_group;");
      }
      if (kk + 16 < BK) {
        load_fragments(fa[cur ^ 1], fb[cur ^ 1], as, bs, kk + 16, wm, wn, lane, trans);
      } else if (kt + 1 < steps) {   // step kt + 1 landed and visible; its first fragments
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2));
        __syncthreads();
        const u16 *nas = smem + ((kt + 1) % STAGES) * STAGE_ELEMS;
        load_fragments(fa[cur ^ 1], fb[cur ^ 1], nas, nas + A_TILE, 0, wm, wn, lane, trans);
      }
      multiply(acc, fa[cur], fb[cur]);
    }
  }
#else
  for (int kt = 0; kt < steps; ++kt) {
    asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2));
    __syncthreads();   // step kt visible to all; step kt - 1's stage free to refill
    const u16 *as = smem + (kt % STAGES) * STAGE_ELEMS, *bs = as + A_TILE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      if (kk == (LATE ? 16 : 0)) {   // the copies of step kt + STAGES - 1
        const int next = kt + STAGES - 1;
        if (next < steps)
          load_stage(smem, next % STAGES, a, lda, b, ldb, m, n, k, bm, bn, next * BK, t, trans);
        asm volatile("cp.async.commit_group;");
      }
      u32 fa[MT][4], fb[NTL][2];
      load_fragments(fa, fb, as, bs, kk, wm, wn, lane, trans);
      multiply(acc, fa, fb);
    }
  }
#endif
  asm volatile("cp.async.wait_all;");
#pragma unroll
  for (int x = 0; x < MT; ++x)
#pragma unroll
    for (int y = 0; y < NTL; ++y) {
      const int i = bm + wm * WTM + x * 16 + g, j = bn + wn * WTN + y * 8 + tig * 2;
      store_c(c, ldc, m, n, i, j, acc[x][y][0], alpha, beta);
      store_c(c, ldc, m, n, i, j + 1, acc[x][y][1], alpha, beta);
      store_c(c, ldc, m, n, i + 8, j, acc[x][y][2], alpha, beta);
      store_c(c, ldc, m, n, i + 8, j + 1, acc[x][y][3], alpha, beta);
    }
}
#endif  // GEMM_MMA == 1
#endif
