// ptxport's portable GEMM: C = alpha op(A) op(B) + beta C, column-major with leading
// dimensions and batch strides (blockIdx.z is the batch), as cuBLAS defines it. Written once
// in CUDA C++ and compiled by ptxport for every device (NVRTC -> PTX -> ptxport's targets);
// ptxport/blas/portable.py picks the kernel and its tile shape per device (a small autotuner)
// and passes them as macros:
//
//   GEMM_MMA       0: the SIMT kernel (any element type, FMA in the accumulator type);
//                  1: the tensor-core kernel (f16 / bf16 in, f32 accumulate, mma.sync m16n8k16)
//   TRANS_A/_B     op(A) / op(B) transposed (A stored k x m, B stored n x k); -1: at run time
//   IN_KIND        A's and B's type: 0 f32, 1 f64, 2 f16, 3 bf16, 4 int8 (SIMT only);
//                  OUT_KIND: C's type, as IN_KIND or 5 int32 (with int8 in: int32 sums)
//   BM, BN, BK     the block's tile of C (BM x BN) and its step along k
//   TM, TN         (SIMT) each thread's micro-tile; WM, WN (MMA) the block's warps as a grid
//
// Both kernels double-buffer shared memory: the next k-step's tile is loaded from global
// memory into registers while the current one is multiplied out of shared memory, then
// stored into the other buffer, one barrier per step. Loads are vectorised (16 bytes: float4
// in the SIMT kernel for f32, 8 halves in the mma kernel) along the contiguous dimension
// where alignment allows (VEC: the host checked ld, batch strides and pointers),
// element-wise with zero fill at the matrix edges otherwise.

#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
// op(A) / op(B) transposed: fixed at compile time (TRANS_x 0 or 1), or -1: read from the
// kernel's `trans` argument (bit 0: A, bit 1: B), one compilation for every transpose pair
// where compiles are dear (OpenCL); helpers take `trans` so that both forms read the same.
#define TA (TRANS_A >= 0 ? TRANS_A : (trans & 1))
#define TB (TRANS_B >= 0 ? TRANS_B : (trans >> 1 & 1))
#ifndef IN_KIND
#define IN_KIND 0
#endif
#ifndef OUT_KIND
#define OUT_KIND IN_KIND
#endif
#ifndef VEC
#define VEC 0
#endif

// u16, u32 and the f16/bf16 conversions: elements.cuh (kernel_source puts it in front).

#if IN_KIND == 0
typedef float In;
#elif IN_KIND == 1
typedef double In;
#elif IN_KIND == 4
typedef signed char In;
#else
typedef u16 In;
#endif
#if OUT_KIND == 0
typedef float Out;
#elif OUT_KIND == 1
typedef double Out;
#elif OUT_KIND == 5
typedef int Out;
#else
typedef u16 Out;
#endif
#if IN_KIND == 1
typedef double Acc;
#elif IN_KIND == 4
typedef int Acc;   // int8 products summed in 32-bit integers (wrapping, as cuBLAS's 32I)
#else
typedef float Acc;
#endif

template <int KIND, typename T> __device__ __forceinline__ Acc to_acc(T v) {
  if (KIND == 2) return f16_to_f32((u16)v);
  if (KIND == 3) return bf16_to_f32((u16)v);
  return (Acc)v;
}
template <int KIND, typename T> __device__ __forceinline__ T from_acc(Acc v) {
  if (KIND == 2) return (T)f32_to_f16((float)v);
  if (KIND == 3) return (T)f32_to_bf16((float)v);
  return (T)v;
}

// C's element (i, j) = alpha acc + beta C (C not read when beta is 0).
__device__ __forceinline__ void store_c(Out *c, int ldc, int m, int n, int i, int j, Acc acc,
                                        Acc alpha, Acc beta) {
  if (i >= m || j >= n) return;
  Out *p = c + i + (long long)j * ldc;
  Acc v = alpha * acc;
  if (beta != (Acc)0) v += beta * to_acc<OUT_KIND>(*p);
  *p = from_acc<OUT_KIND, Out>(v);
}

// op(A)(i, p) and op(B)(p, j), or 0 outside the matrices.
__device__ __forceinline__ In load_a(const In *a, int lda, int m, int k, int i, int p, int trans) {
  if (i >= m || p >= k) return (In)0;
  return TA ? a[p + (long long)i * lda] : a[i + (long long)p * lda];
}
__device__ __forceinline__ In load_b(const In *b, int ldb, int k, int n, int p, int j, int trans) {
  if (p >= k || j >= n) return (In)0;
  return TB ? b[j + (long long)p * ldb] : b[p + (long long)j * ldb];
}

#if !GEMM_MMA
// -- the SIMT kernel --------------------------------------------------------------------------
// NT threads; thread t owns rows tr + r * (BM / TM) and columns tc + c * (BN / TN) of the block
// tile (tr = t % (BM / TM)): consecutive threads write consecutive rows of C (coalesced) and
// read consecutive words of the A tile (no bank conflicts). Shared tiles are k-major and hold
// the accumulator type (16-bit inputs are widened once, on the way in).

#define NT ((BM / TM) * (BN / TN))
#define A_PER_THREAD (BM * BK / NT)
#define B_PER_THREAD (BK * BN / NT)
// float4 loads when the data are f32, the host found them aligned (VEC), and every thread
// moves whole groups of 4
#define SIMT_VEC4 (VEC && IN_KIND == 0 && A_PER_THREAD % 4 == 0 && B_PER_THREAD % 4 == 0)

// Element e of a tile of R x K (R rows, K along k), laid out so that consecutive e run along
// the stored matrix's contiguous dimension: along rows when not transposed, along k when.
__device__ __forceinline__ void a_coords(int e, int &i, int &p, int trans) {
  if (TA) { p = e % BK; i = e / BK; } else { i = e % BM; p = e / BM; }
}
__device__ __forceinline__ void b_coords(int e, int &p, int &j, int trans) {
  if (TB) { j = e % BN; p = e / BN; } else { p = e % BK; j = e / BK; }
}

extern "C" __global__ void __launch_bounds__(NT)
ptxport_gemm(int m, int n, int k, Acc alpha, const In *a, int lda, long long stride_a,
             const In *b, int ldb, long long stride_b, Acc beta, Out *c, int ldc,
             long long stride_c, int trans) {
  __shared__ Acc as[2][BK][BM + 1];
  __shared__ Acc bs[2][BK][BN + 1];
  const int t = threadIdx.x, tr = t % (BM / TM), tc = t / (BM / TM);
  const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;

#if SIMT_VEC4
  // 16-byte loads: each thread moves groups of 4 floats along the stored matrices'
  // contiguous dimension (element-wise where a group crosses a matrix edge)
  float4 ra[A_PER_THREAD / 4], rb[B_PER_THREAD / 4];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int x = 0; x < A_PER_THREAD / 4; ++x) {
      int g = t + x * NT, i, p;
      if (TA) { p = (g % (BK / 4)) * 4; i = g / (BK / 4); }
      else { i = (g % (BM / 4)) * 4; p = g / (BM / 4); }
      int gi = bm + i, gp = k0 + p;
      float *v = (float *)&ra[x];
      if (TA ? (gi < m && gp + 3 < k) : (gi + 3 < m && gp < k)) {
        ra[x] = *(const float4 *)(TA ? a + gp + (long long)gi * lda : a + gi + (long long)gp * lda);
      } else {
#pragma unroll
        for (int y = 0; y < 4; ++y)
          v[y] = TA ? load_a(a, lda, m, k, gi, gp + y, trans) : load_a(a, lda, m, k, gi + y, gp, trans);
      }
    }
#pragma unroll
    for (int x = 0; x < B_PER_THREAD / 4; ++x) {
      int g = t + x * NT, p, j;
      if (TB) { j = (g % (BN / 4)) * 4; p = g / (BN / 4); }
      else { p = (g % (BK / 4)) * 4; j = g / (BK / 4); }
      int gp = k0 + p, gj = bn + j;
      float *v = (float *)&rb[x];
      if (TB ? (gp < k && gj + 3 < n) : (gp + 3 < k && gj < n)) {
        rb[x] = *(const float4 *)(TB ? b + gj + (long long)gp * ldb : b + gp + (long long)gj * ldb);
      } else {
#pragma unroll
        for (int y = 0; y < 4; ++y)
          v[y] = TB ? load_b(b, ldb, k, n, gp, gj + y, trans) : load_b(b, ldb, k, n, gp + y, gj, trans);
      }
    }
  };
  auto stash = [&](int s) {
#pragma unroll
    for (int x = 0; x < A_PER_THREAD / 4; ++x) {
      int g = t + x * NT;
      const float *v = (const float *)&ra[x];
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        if (TA) as[s][(g % (BK / 4)) * 4 + y][g / (BK / 4)] = v[y];
        else as[s][g / (BM / 4)][(g % (BM / 4)) * 4 + y] = v[y];
      }
    }
#pragma unroll
    for (int x = 0; x < B_PER_THREAD / 4; ++x) {
      int g = t + x * NT;
      const float *v = (const float *)&rb[x];
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        if (TB) bs[s][g / (BN / 4)][(g % (BN / 4)) * 4 + y] = v[y];
        else bs[s][(g % (BK / 4)) * 4 + y][g / (BK / 4)] = v[y];
      }
    }
  };
#else
  In ra[A_PER_THREAD], rb[B_PER_THREAD];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int x = 0; x < A_PER_THREAD; ++x) {
      int i, p;
      a_coords(t + x * NT, i, p, trans);
      ra[x] = load_a(a, lda, m, k, bm + i, k0 + p, trans);
    }
#pragma unroll
    for (int x = 0; x < B_PER_THREAD; ++x) {
      int p, j;
      b_coords(t + x * NT, p, j, trans);
      rb[x] = load_b(b, ldb, k, n, k0 + p, bn + j, trans);
    }
  };
  auto stash = [&](int s) {
#pragma unroll
    for (int x = 0; x < A_PER_THREAD; ++x) {
      int i, p;
      a_coords(t + x * NT, i, p, trans);
      as[s][p][i] = to_acc<IN_KIND>(ra[x]);
    }
#pragma unroll
    for (int x = 0; x < B_PER_THREAD; ++x) {
      int p, j;
      b_coords(t + x * NT, p, j, trans);
      bs[s][p][j] = to_acc<IN_KIND>(rb[x]);
    }
  };
#endif

  // (zero from a parameter: a constant zero-fill may become a call to memset, which the
  // CPU target's kernels cannot make)
  const Acc zero = (Acc)(m < 0);
  Acc acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] = zero;

  fetch(0);
  stash(0);
  __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < k; k0 += BK) {
    const bool more = k0 + BK < k;
    if (more) fetch(k0 + BK);   // the next tile travels while this one is multiplied
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Acc fa[TM], fb[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) fa[r] = as[s][kk][tr + r * (BM / TM)];
#pragma unroll
      for (int q = 0; q < TN; ++q) fb[q] = bs[s][kk][tc + q * (BN / TN)];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) acc[r][q] += fa[r] * fb[q];
    }
    if (more) {
      stash(s ^ 1);
      __syncthreads();
      s ^= 1;
    }
  }
#pragma unroll
  for (int q = 0; q < TN; ++q)
#pragma unroll
    for (int r = 0; r < TM; ++r)
      store_c(c, ldc, m, n, bm + tr + r * (BM / TM), bn + tc + q * (BN / TN), acc[r][q],
              alpha, beta);
}

#else
// -- the tensor-core kernel -------------------------------------------------------------------
// WM x WN warps; warp (wm, wn) computes the (BM / WM) x (BN / WN) part of the block tile as
// MT x NTL tiles of mma.sync.m16n8k16 (f32 accumulators). Shared tiles keep k contiguous:
// as[i][p] = op(A)(i, p), bs[j][p] = op(B)(p, j), which is the order the A (.row) and B (.col)
// fragments pack two elements per register in; rows are padded by 8 elements against bank
// conflicts. Fragment layouts: PTX ISA 9.7.14.5.8 (m16n8k16 with .f16 / .bf16).

#define NTHREADS (WM * WN * 32)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MT (WTM / 16)
#define NTL (WTN / 8)
#define PITCH (BK + 8)
#define A_CHUNKS (BM * BK / 8 / NTHREADS)   // 8-element chunks each thread loads
#define B_CHUNKS (BN * BK / 8 / NTHREADS)

struct Chunk { u16 v[8]; };

// Chunk e of the tile: 8 consecutive elements along the stored matrix's contiguous
// dimension, loaded as one 16-byte vector where VEC allows and all 8 are inside.
__device__ __forceinline__ void load_chunk_a(const In *a, int lda, int m, int k, int bm, int k0,
                                             int e, Chunk &out, int trans) {
  int i, p;
  if (TA) { p = (e % (BK / 8)) * 8; i = e / (BK / 8); }   // contiguous along k
  else { i = (e % (BM / 8)) * 8; p = e / (BM / 8); }           // contiguous along rows
  int gi = bm + i, gp = k0 + p;
  if (VEC && (TA ? (gi < m && gp + 7 < k) : (gi + 7 < m && gp < k))) {
    const In *src = TA ? a + gp + (long long)gi * lda : a + gi + (long long)gp * lda;
    *(uint4 *)out.v = *(const uint4 *)src;
    return;
  }
#pragma unroll
  for (int x = 0; x < 8; ++x)
    out.v[x] = TA ? load_a(a, lda, m, k, gi, gp + x, trans) : load_a(a, lda, m, k, gi + x, gp, trans);
}
__device__ __forceinline__ void load_chunk_b(const In *b, int ldb, int k, int n, int k0, int bn,
                                             int e, Chunk &out, int trans) {
  int p, j;
  if (TB) { j = (e % (BN / 8)) * 8; p = e / (BN / 8); }   // contiguous along columns
  else { p = (e % (BK / 8)) * 8; j = e / (BK / 8); }           // contiguous along k
  int gp = k0 + p, gj = bn + j;
  if (VEC && (TB ? (gp < k && gj + 7 < n) : (gp + 7 < k && gj < n))) {
    const In *src = TB ? b + gj + (long long)gp * ldb : b + gp + (long long)gj * ldb;
    *(uint4 *)out.v = *(const uint4 *)src;
    return;
  }
#pragma unroll
  for (int x = 0; x < 8; ++x)
    out.v[x] = TB ? load_b(b, ldb, k, n, gp, gj + x, trans) : load_b(b, ldb, k, n, gp + x, gj, trans);
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

extern "C" __global__ void __launch_bounds__(NTHREADS)
ptxport_gemm(int m, int n, int k, float alpha, const In *a, int lda, long long stride_a,
             const In *b, int ldb, long long stride_b, float beta, Out *c, int ldc,
             long long stride_c, int trans) {
  __shared__ __align__(16) u16 as[2][BM][PITCH];
  __shared__ __align__(16) u16 bs[2][BN][PITCH];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int wm = warp % WM, wn = warp / WM, g = lane / 4, tig = lane % 4;
  const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;

  Chunk ra[A_CHUNKS], rb[B_CHUNKS];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int x = 0; x < A_CHUNKS; ++x) load_chunk_a(a, lda, m, k, bm, k0, t + x * NTHREADS, ra[x], trans);
#pragma unroll
    for (int x = 0; x < B_CHUNKS; ++x) load_chunk_b(b, ldb, k, n, k0, bn, t + x * NTHREADS, rb[x], trans);
  };
  auto stash = [&](int s) {
#pragma unroll
    for (int x = 0; x < A_CHUNKS; ++x) {
      int e = t + x * NTHREADS;
      if (TA) {
        *(uint4 *)&as[s][e / (BK / 8)][(e % (BK / 8)) * 8] = *(uint4 *)ra[x].v;
      } else {
        int i = (e % (BM / 8)) * 8, p = e / (BM / 8);
#pragma unroll
        for (int y = 0; y < 8; ++y) as[s][i + y][p] = ra[x].v[y];
      }
    }
#pragma unroll
    for (int x = 0; x < B_CHUNKS; ++x) {
      int e = t + x * NTHREADS;
      if (TB) {
        int j = (e % (BN / 8)) * 8, p = e / (BN / 8);
#pragma unroll
        for (int y = 0; y < 8; ++y) bs[s][j + y][p] = rb[x].v[y];
      } else {
        *(uint4 *)&bs[s][e / (BK / 8)][(e % (BK / 8)) * 8] = *(uint4 *)rb[x].v;
      }
    }
  };

  const float zero = (float)(m < 0);   // not a constant: see the SIMT kernel
  float acc[MT][NTL][4];
#pragma unroll
  for (int x = 0; x < MT; ++x)
#pragma unroll
    for (int y = 0; y < NTL; ++y)
#pragma unroll
      for (int z = 0; z < 4; ++z) acc[x][y][z] = zero;

  fetch(0);
  stash(0);
  __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < k; k0 += BK) {
    const bool more = k0 + BK < k;
    if (more) fetch(k0 + BK);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      u32 fa[MT][4], fb[NTL][2];
#pragma unroll
      for (int x = 0; x < MT; ++x) {
        const int r = wm * WTM + x * 16 + g;
        fa[x][0] = *(const u32 *)&as[s][r][kk + tig * 2];
        fa[x][1] = *(const u32 *)&as[s][r + 8][kk + tig * 2];
        fa[x][2] = *(const u32 *)&as[s][r][kk + tig * 2 + 8];
        fa[x][3] = *(const u32 *)&as[s][r + 8][kk + tig * 2 + 8];
      }
#pragma unroll
      for (int y = 0; y < NTL; ++y) {
        const int col = wn * WTN + y * 8 + g;
        fb[y][0] = *(const u32 *)&bs[s][col][kk + tig * 2];
        fb[y][1] = *(const u32 *)&bs[s][col][kk + tig * 2 + 8];
      }
#pragma unroll
      for (int x = 0; x < MT; ++x)
#pragma unroll
        for (int y = 0; y < NTL; ++y) mma_16816(acc[x][y], fa[x], fb[y]);
    }
    if (more) {
      stash(s ^ 1);
      __syncthreads();
      s ^= 1;
    }
  }
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
#endif
