// ptxport's portable GEMM: C = alpha op(A) op(B) + beta C, column-major with leading
// dimensions and batch strides (blockIdx.z is the batch), as cuBLAS defines it. Written once
// in CUDA C++ and compiled by ptxport for every device (NVRTC -> PTX -> ptxport's targets);
// ptxport/blas/portable.py picks the kernel and its tile shape per device (a small autotuner)
// and passes them as macros:
//
//   GEMM_MMA       0: the SIMT kernel (any element type, FMA in the accumulator type);
//                  1: the tensor-core kernel (f16 / bf16 in, f32 accumulate, mma.sync m16n8k16)
//                  2: the warpgroup kernel (sm_90a's wgmma, f16 / bf16): gemm_wgmma.cu;
//                  portable.py appends gemm_mma.cuh (1 and 2) and gemm_wgmma.cu to this file
//   EVEN           1: m, n, k multiples of BM, BN, BK (with VEC): no edge checks
//   TRANS_A/_B     op(A) / op(B) transposed (A stored k x m, B stored n x k); -1: at run time
//   IN_KIND        A's and B's type: 0 f32, 1 f64, 2 f16, 3 bf16, 4 int8 (SIMT only);
//                  OUT_KIND: C's type, as IN_KIND or 5 int32 (with int8 in: int32 sums)
//   BM, BN, BK     the block's tile of C (BM x BN) and its step along k
//   TM, TN         (SIMT) each thread's micro-tile; WM, WN (MMA) the block's warps as a grid
//   STAGES, LATE   (MMA) the cp.async pipeline's depth; LATE 1: each k-step's copies issued
//                  after its first 16-wide mmas rather than before (their address arithmetic
//                  overlaps the mmas; fewer live registers for some tiles, slower for others)
//   AHEAD          1: each k-step's shared-memory values (SIMT) or mma fragments read while
//                  the previous ones are multiplied, double-buffered in registers
//   WARPTILE       (SIMT) 1: threads laid out in warp tiles (see the SIMT kernel)
//   ASYNC          (SIMT, f32 / f64) 1: tiles copied to shared memory by cp.async in a ring
//   UNROLL_K       (wgmma) 0: each k-step's 16-wide wgmma steps as a loop (for the CPU)
//   SPLIT          (SIMT) k split among SPLIT blocks a tile (gather_parts); GROUP_M, STORE4,
//                  SIMT_STAGES: defaults below, macros for the benchmarks' sweeps
//
// The SIMT kernel double-buffers shared memory: the next k-step's tile is loaded from global
// memory into registers while the current one is multiplied out of shared memory, then
// stored into the other buffer, one barrier per step; the mma kernel copies global memory to
// shared with cp.async, STAGES - 1 k-steps ahead. Loads are vectorised (16 bytes: float4 in
// the SIMT kernel for f32, 8 halves in the mma kernel) along the contiguous dimension where
// alignment allows (VEC: the host checked ld, batch strides and pointers), element-wise with
// zero fill at the matrix edges otherwise.

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
// EVEN 1: the host found m, n, k multiples of BM, BN, BK (and VEC): no edge checks at all
#ifndef EVEN
#define EVEN 0
#endif
#ifndef AHEAD
#define AHEAD 0
#endif
#ifndef LATE
#define LATE 0
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
  if (!EVEN && (i >= m || j >= n)) return;
  Out *p = c + i + (long long)j * ldc;
  Acc v = alpha * acc;
  if (beta != (Acc)0) v += beta * to_acc<OUT_KIND>(*p);
  *p = from_acc<OUT_KIND, Out>(v);
}

// The block's tile of C (tm, tn). Blocks are numbered along the grid's x (C's tile rows)
// first; taken in groups of GROUP_M tile rows, swept column by column, the blocks running at
// one time share their A and B tiles through L2 rather than each streaming its own.
#ifndef GROUP_M
#define GROUP_M 8
#endif
__device__ __forceinline__ void block_tile(int &tm, int &tn) {
  const int tiles_m = gridDim.x, pid = blockIdx.x + blockIdx.y * tiles_m;
  const int group = GROUP_M * gridDim.y, first = pid / group * GROUP_M;
  const int rows = min(tiles_m - first, GROUP_M);
  tm = first + pid % group % rows;
  tn = pid % group / rows;
}

// op(A)(i, p) and op(B)(p, j), or 0 outside the matrices.
__device__ __forceinline__ In load_a(const In *a, int lda, int m, int k, int i, int p, int trans) {
  if (!EVEN && (i >= m || p >= k)) return (In)0;
  return TA ? a[p + (long long)i * lda] : a[i + (long long)p * lda];
}
__device__ __forceinline__ In load_b(const In *b, int ldb, int k, int n, int p, int j, int trans) {
  if (!EVEN && (p >= k || j >= n)) return (In)0;
  return TB ? b[j + (long long)p * ldb] : b[p + (long long)j * ldb];
}

#if GEMM_LANES
// the lanes kernel, shaped for the CPU target: gemm_lanes.cuh, which kernel_source appends
#elif !GEMM_MMA
// -- the SIMT kernel --------------------------------------------------------------------------
// NT threads; each owns TM rows and TN columns of the block tile in runs of SUB_M (SUB_N)
// consecutive ones, SPACE_M (SPACE_N) apart: rows (r / SUB_M) * SPACE_M + row0 + r % SUB_M
// (the layouts: see WARPTILE). Runs of 4 (where TM / TN are multiples of 4) are read from shared
// memory as one 4-vector; consecutive threads read consecutive vectors (no bank conflicts)
// and write consecutive rows of C. Shared tiles are k-major (as[p][i], bs[p][j]) in the
// accumulator type (16-bit inputs are widened once, on the way in), rows padded against
// bank conflicts where a transposing store writes them.

#ifndef WARPTILE
#define WARPTILE 0
#endif
#define NT ((BM / TM) * (BN / TN))
// Thread layout. WARPTILE 0: thread t = (tr, tc), tr = t % (BM / TM), runs spaced SPACE_M
// = BM * SUB_M / TM apart. WARPTILE 1: each warp owns a (LANES_M TM) x (LANES_N TN) warp
// tile, its lanes LANES_M x LANES_N; a thread's runs are LANES_M SUB_M apart, so one 4-vector
// read of a warp touches LANES_M (LANES_N) consecutive vectors: 128 bytes of A, 64 of B,
// one shared-memory wavefront each (broadcast to the lanes that share them).
#define LANES_M 8
#define LANES_N 4
#if WARPTILE && (BM % (LANES_M * TM) != 0 || BN % (LANES_N * TN) != 0)
#error "WARPTILE: BM must be a multiple of 8 TM and BN of 4 TN"
#endif
#define SPACE_M (WARPTILE ? LANES_M * SUB_M : BM * SUB_M / TM)
#define SPACE_N (WARPTILE ? LANES_N * SUB_N : BN * SUB_N / TN)
#define A_PER_THREAD (BM * BK / NT)
#define B_PER_THREAD (BK * BN / NT)
#define SUB_M (TM % 4 == 0 ? 4 : 1)
#define SUB_N (TN % 4 == 0 ? 4 : 1)
#define PITCH_A (BM + SUB_M)
#define PITCH_B (BN + SUB_N)
// float4 loads of an operand when the data are f32, the host found them aligned (VEC), and
// every thread moves whole groups of 4 of it
#define VEC4_A (VEC && IN_KIND == 0 && A_PER_THREAD % 4 == 0)
#define VEC4_B (VEC && IN_KIND == 0 && B_PER_THREAD % 4 == 0)

struct __align__(4 * sizeof(Acc)) Acc4 { Acc v[4]; };

// `count` values of a thread's run from shared row `row` at `at`: one 4-vector or one value.
template <int SUB>
__device__ __forceinline__ void read_run(Acc *out, const Acc *row, int at) {
  if (SUB == 4) {
    const Acc4 v = *(const Acc4 *)(row + at);
#pragma unroll
    for (int y = 0; y < 4; ++y) out[y] = v.v[y];
  } else {
    out[0] = row[at];
  }
}

// A and B take the same path to shared memory, as operands X of R rows (op(A)'s BM rows i,
// op(B)'s BN columns j) along k: element (r, p) lies at x[p + r ld] where the stored matrix
// runs along k (`kc`: A transposed, B not), else at x[r + p ld]; 0 outside rows x k.
__device__ __forceinline__ In load_x(const In *x, int ld, int rows, int k, int r, int p,
                                     bool kc) {
  if (!EVEN && (r >= rows || p >= k)) return (In)0;
  return kc ? x[p + (long long)r * ld] : x[r + (long long)p * ld];
}

// Element or 4-group g of a thread's part of an R x BK tile: consecutive g run along the
// stored matrix's contiguous dimension (k where kc, else r); `w` elements a group.
template <int R, int w>
__device__ __forceinline__ void x_coords(int g, int &r, int &p, bool kc) {
  if (kc) { p = g % (BK / w) * w; r = g / (BK / w); } else { r = g % (R / w) * w; p = g / (R / w); }
}

// One operand's share of the next k-step on its way from global to shared memory, in
// registers: PER elements a thread, as groups of 4 floats (V4) or single elements.
template <int PER, bool V4> struct Part { In v[PER]; };
template <int PER> struct Part<PER, true> { float4 v[PER / 4]; };

// Thread t's part of the R x BK tile at rows r0, k0 of operand x (rows x k).
template <int R, int PER, bool V4>
__device__ __forceinline__ void fetch_part(Part<PER, V4> &part, const In *x, int ld, int rows,
                                           int k, int r0, int k0, int t, bool kc) {
  if constexpr (V4) {
    // 16-byte loads along the contiguous dimension (element-wise where a group crosses an edge)
#pragma unroll
    for (int e = 0; e < PER / 4; ++e) {
      int r, p;
      x_coords<R, 4>(t + e * NT, r, p, kc);
      const int gr = r0 + r, gp = k0 + p;
      if (EVEN || (kc ? (gr < rows && gp + 3 < k) : (gr + 3 < rows && gp < k))) {
        part.v[e] = *(const float4 *)(kc ? x + gp + (long long)gr * ld : x + gr + (long long)gp * ld);
      } else {
        float *v = (float *)&part.v[e];
#pragma unroll
        for (int y = 0; y < 4; ++y)
          v[y] = load_x(x, ld, rows, k, kc ? gr : gr + y, kc ? gp + y : gp, kc);
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < PER; ++e) {
      int r, p;
      x_coords<R, 1>(t + e * NT, r, p, kc);
      part.v[e] = load_x(x, ld, rows, k, r0 + r, k0 + p, kc);
    }
  }
}

// The staged part into one buffer of the k-major shared tile s[p][r] (widened to Acc).
template <int R, int PITCH, int PER, bool V4>
__device__ __forceinline__ void stash_part(const Part<PER, V4> &part, Acc (*s)[PITCH], int t,
                                           bool kc) {
#pragma unroll
  for (int e = 0; e < (V4 ? PER / 4 : PER); ++e) {
    int r, p;
    if constexpr (V4) {
      x_coords<R, 4>(t + e * NT, r, p, kc);
      const float *v = (const float *)&part.v[e];
#pragma unroll
      for (int y = 0; y < 4; ++y) s[kc ? p + y : p][kc ? r : r + y] = v[y];
    } else {
      x_coords<R, 1>(t + e * NT, r, p, kc);
      s[p][r] = to_acc<IN_KIND>(part.v[e]);
    }
  }
}

// ASYNC (f32 and f64, whose shared tiles hold the input type itself): the tiles go from
// global to shared memory with cp.async, element by element (4 or 8 bytes: the tiles are
// transposed against the stored matrices where k is contiguous), in a ring of SIMT_STAGES
// buffers: no registers hold the next k-step, and no stores are left for the threads to make.
#ifndef ASYNC
#define ASYNC 0
#endif
#define SIMT_ASYNC (ASYNC && (IN_KIND == 0 || IN_KIND == 1))
#ifndef SIMT_STAGES
#define SIMT_STAGES (SIMT_ASYNC && BK <= 8 ? 3 : 2)
#endif

// cp.async of the thread's part of the R x BK tile at rows r0, k0 of operand x into s[p][r]
// (zero outside rows x k: a source size of 0 copies nothing and fills the element with 0).
template <int R, int PER, int PITCH>
__device__ __forceinline__ void copy_part(Acc (*s)[PITCH], const In *x, int ld, int rows, int k,
                                          int r0, int k0, int t, bool kc) {
#pragma unroll
  for (int e = 0; e < PER; ++e) {
    int r, p;
    x_coords<R, 1>(t + e * NT, r, p, kc);
    const int gr = r0 + r, gp = k0 + p;
    const bool inside = EVEN || (gr < rows && gp < k);
    const In *src = kc ? x + gp + (long long)gr * ld : x + gr + (long long)gp * ld;
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                 :: "r"((unsigned)__cvta_generic_to_shared(&s[p][r])), "l"(inside ? src : x),
                    "n"(sizeof(In)), "r"(inside ? (int)sizeof(In) : 0));
  }
}

struct Staged {
  Part<A_PER_THREAD, VEC4_A> a;
  Part<B_PER_THREAD, VEC4_B> b;
};

// Thread t's part of the k-step at k0 (zero outside the matrices).
__device__ __forceinline__ void fetch(Staged &r, const In *a, int lda, const In *b, int ldb,
                                      int m, int n, int k, int bm, int bn, int k0, int t,
                                      int trans) {
  fetch_part<BM>(r.a, a, lda, m, k, bm, k0, t, TA);
  fetch_part<BN>(r.b, b, ldb, n, k, bn, k0, t, !TB);
}

// The staged tiles into one buffer of the k-major shared tiles.
__device__ __forceinline__ void stash(const Staged &r, Acc (*as)[PITCH_A], Acc (*bs)[PITCH_B],
                                      int t, int trans) {
  stash_part<BM, PITCH_A>(r.a, as, t, TA);
  stash_part<BN, PITCH_B>(r.b, bs, t, !TB);
}

// The thread's TM values of op(A) and TN of op(B) at one k of the shared tiles (rows
// `as_k`, `bs_k`), in runs from row0 / col0.
__device__ __forceinline__ void read_fragments(Acc *fa, Acc *fb, const Acc *as_k,
                                               const Acc *bs_k, int row0, int col0) {
#pragma unroll
  for (int r = 0; r < TM; r += SUB_M)
    read_run<SUB_M>(fa + r, as_k, r / SUB_M * SPACE_M + row0);
#pragma unroll
  for (int q = 0; q < TN; q += SUB_N)
    read_run<SUB_N>(fb + q, bs_k, q / SUB_N * SPACE_N + col0);
}

__device__ __forceinline__ void outer_product(Acc (*acc)[TN], const Acc *fa, const Acc *fb) {
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] += fa[r] * fb[q];
}

// Two blocks an SM where the micro-tile leaves room (up to 64 32-bit accumulators: at most
// 128 registers a thread with up to 256 threads): the other block's warps run while one waits
// at its barrier. (f64 accumulators take twice the registers, and 512 threads of 128
// registers fill the SM's: one block, no cap.)
#define SIMT_BLOCKS (sizeof(Acc) == 4 && TM * TN <= 64 && NT <= 256 ? 2 : 1)
// STORE4 1: C's f32 runs of 4 rows stored 16 bytes at a time (store_run). Not by default
// where two blocks of 8 x 8 micro-tiles cap a thread at 128 registers: there the scalar stores
// left the main loop more registers and ran 2-3% faster on the H100 (2026-11-26).
#ifndef STORE4
#define STORE4 (TM * TN < 64 || SIMT_BLOCKS == 1)
#endif
// C's rows i .. i + SUB - 1 of column j: one 16-byte store (and load, for beta) where C is f32
// and 16-byte aligned (`vec_c`) and the run lies inside it, element by element otherwise.
template <int SUB>
__device__ __forceinline__ void store_run(Out *c, int ldc, int m, int n, int i, int j,
                                          const Acc *run, Acc alpha, Acc beta, bool vec_c) {
  if constexpr (STORE4 && SUB == 4 && OUT_KIND == 0 &&
                (IN_KIND == 0 || IN_KIND == 2 || IN_KIND == 3)) {
    if (vec_c && (EVEN || (i + 3 < m && j < n))) {
      float4 *p = (float4 *)(c + i + (long long)j * ldc);
      float4 v = make_float4(alpha * run[0], alpha * run[1], alpha * run[2], alpha * run[3]);
      if (beta != 0.0f) {
        const float4 old = *p;
        v.x += beta * old.x; v.y += beta * old.y; v.z += beta * old.z; v.w += beta * old.w;
      }
      *p = v;
      return;
    }
  }
#pragma unroll
  for (int y = 0; y < SUB; ++y) store_c(c, ldc, m, n, i + y, j, run[y], alpha, beta);
}

// The thread's micro-tile into C, its first run at (i0, j0).
template <bool VC>
__device__ __forceinline__ void store_tile(Out *c, int ldc, int m, int n, int i0, int j0,
                                           const Acc (*acc)[TN], Acc alpha, Acc beta) {
#pragma unroll
  for (int q = 0; q < TN; ++q)
#pragma unroll
    for (int r = 0; r < TM; r += SUB_M) {
      Acc run[SUB_M];
#pragma unroll
      for (int y = 0; y < SUB_M; ++y) run[y] = acc[r + y][q];
      store_run<SUB_M>(c, ldc, m, n, i0 + r / SUB_M * SPACE_M,
                       j0 + q / SUB_N * SPACE_N + q % SUB_N, run, alpha, beta, VC);
    }
}

// SPLIT > 1: the k range is split SPLIT ways, one block a part. Each block leaves its partial
// sums in its slot of the workspace `work` (thread t's at t, t + NT, ...); the last of a
// tile's blocks to arrive (a counter a tile, which that block sets back to 0 for the next
// launch) adds the slots up in the order of the parts, its own from registers (the same sums
// whichever block arrives last), and stores C; the others are done.
#ifndef SPLIT
#define SPLIT 1
#endif
__device__ __forceinline__ bool gather_parts(Acc (*acc)[TN], Acc *work, unsigned *counters,
                                             unsigned &arrived, int tile, int part, int t) {
  Acc *slot = work + (long long)tile * SPLIT * (BM * BN);
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) slot[part * (BM * BN) + (r * TN + q) * NT + t] = acc[r][q];
  __threadfence();   // the slot visible to the other parts' blocks before the count
  __syncthreads();
  if (t == 0) arrived = atomicAdd(&counters[tile], 1u);
  __syncthreads();
  if (arrived != SPLIT - 1) return false;
  __threadfence();
  const volatile Acc *parts = slot;   // (written by other blocks: not from a stale cache)
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      const Acc mine = acc[r][q];   // (values, not places: acc stays in registers)
      Acc sum = part == 0 ? mine : (Acc)parts[(r * TN + q) * NT + t];
#pragma unroll
      for (int s = 1; s < SPLIT; ++s)
        sum += s == part ? mine : (Acc)parts[s * (BM * BN) + (r * TN + q) * NT + t];
      acc[r][q] = sum;
    }
  if (t == 0) counters[tile] = 0;
  return true;
}

extern "C" __global__ void __launch_bounds__(NT, SIMT_BLOCKS)
ptxport_gemm(int m, int n, int k, Acc alpha, const In *a, int lda, long long stride_a,
             const In *b, int ldb, long long stride_b, Acc beta, Out *c, int ldc,
             long long stride_c, int trans
#if SPLIT > 1
             , Acc *work, unsigned *counters
#endif
             ) {
  __shared__ __align__(32) Acc as[SIMT_STAGES][BK][PITCH_A];
  __shared__ __align__(32) Acc bs[SIMT_STAGES][BK][PITCH_B];
  const int t = threadIdx.x;
  int tile_m, tile_n;
  block_tile(tile_m, tile_n);
  const int bm = tile_m * BM, bn = tile_n * BN;
  // blockIdx.z: the batch, and with SPLIT its part of k (whole k-steps: k_lo .. k_hi)
  const int z = blockIdx.z / SPLIT;
#if SPLIT > 1
  const int part = blockIdx.z % SPLIT, per = ((k + BK - 1) / BK + SPLIT - 1) / SPLIT * BK;
  const int k_lo = part * per, k_hi = min(k, k_lo + per);
#else
  const int k_lo = 0, k_hi = k;
#endif
  a += z * stride_a;
  b += z * stride_b;
  c += z * stride_c;

  // (zero from a parameter: a constant zero-fill may become a call to memset, which the
  // CPU target's kernels cannot make)
  const Acc zero = (Acc)(m < 0);
  Acc acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] = zero;

  // the first row / column of the thread's first run, relative to the block tile
#if WARPTILE
  const int warp = t / 32, lane = t % 32, warps_m = BM / (LANES_M * TM);
  const int row0 = warp % warps_m * (LANES_M * TM) + lane % LANES_M * SUB_M;
  const int col0 = warp / warps_m * (LANES_N * TN) + lane / LANES_M * SUB_N;
#else
  const int row0 = t % (BM / TM) * SUB_M, col0 = t / (BM / TM) * SUB_N;
#endif
#if SIMT_ASYNC
  // k-step kt in buffer kt % SIMT_STAGES, its copies issued SIMT_STAGES - 1 steps ahead; one
  // cp.async group a step (empty past the end): wait_group SIMT_STAGES - 2 means "landed"
  const int steps = (k_hi - k_lo + BK - 1) / BK;
#pragma unroll
  for (int st = 0; st < SIMT_STAGES - 1; ++st) {
    if (st < steps) {
      copy_part<BM, A_PER_THREAD>(as[st], a, lda, m, k, bm, k_lo + st * BK, t, TA);
      copy_part<BN, B_PER_THREAD>(bs[st], b, ldb, n, k, bn, k_lo + st * BK, t, !TB);
    }
    asm volatile("cp.async.commit_group;");
  }
  for (int kt = 0; kt < steps; ++kt) {
    asm volatile("cp.async.wait_group %0;" :: "n"(SIMT_STAGES - 2));
    __syncthreads();   // step kt visible to all; step kt - 1's buffer free to refill
    const int next = kt + SIMT_STAGES - 1, s = kt % SIMT_STAGES;
    if (next < steps) {
      const int k0 = k_lo + next * BK;
      copy_part<BM, A_PER_THREAD>(as[next % SIMT_STAGES], a, lda, m, k, bm, k0, t, TA);
      copy_part<BN, B_PER_THREAD>(bs[next % SIMT_STAGES], b, ldb, n, k, bn, k0, t, !TB);
    }
    asm volatile("cp.async.commit_group;");
#if AHEAD   // k-step kk + 1's values read while kk's are multiplied
    Acc fa[2][TM], fb[2][TN];
    read_fragments(fa[0], fb[0], as[s][0], bs[s][0], row0, col0);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk + 1 < BK)
        read_fragments(fa[(kk + 1) % 2], fb[(kk + 1) % 2], as[s][kk + 1], bs[s][kk + 1], row0,
                       col0);
      outer_product(acc, fa[kk % 2], fb[kk % 2]);
    }
#else
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Acc fa[TM], fb[TN];
      read_fragments(fa, fb, as[s][kk], bs[s][kk], row0, col0);
      outer_product(acc, fa, fb);
    }
#endif
  }
  asm volatile("cp.async.wait_all;");
#else
  Staged staged;
  fetch(staged, a, lda, b, ldb, m, n, k, bm, bn, k_lo, t, trans);
  stash(staged, as[0], bs[0], t, trans);
  __syncthreads();
  int s = 0;
#if AHEAD
  // fragments double-buffered in registers: k-step kk + 1's are read while kk's are
  // multiplied, and the next tile's first ones right after its barrier, while the last
  // k-step of this tile is multiplied
  Acc fa[2][TM], fb[2][TN];
  read_fragments(fa[0], fb[0], as[0][0], bs[0][0], row0, col0);
  for (int k0 = k_lo; k0 < k_hi; k0 += BK) {
    const bool more = k0 + BK < k_hi;
    if (more)   // the next tile travels while this one is multiplied
      fetch(staged, a, lda, b, ldb, m, n, k, bm, bn, k0 + BK, t, trans);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const int cur = kk % 2;   // BK is even: the next tile's first fragments go to 0
      if (kk + 1 < BK) {
        read_fragments(fa[cur ^ 1], fb[cur ^ 1], as[s][kk + 1], bs[s][kk + 1], row0, col0);
      } else if (more) {
        stash(staged, as[s ^ 1], bs[s ^ 1], t, trans);
        __syncthreads();
        s ^= 1;
        read_fragments(fa[cur ^ 1], fb[cur ^ 1], as[s][0], bs[s][0], row0, col0);
      }
      outer_product(acc, fa[cur], fb[cur]);
    }
  }
#else
  for (int k0 = k_lo; k0 < k_hi; k0 += BK) {
    const bool more = k0 + BK < k_hi;
    if (more)   // the next tile travels while this one is multiplied
      fetch(staged, a, lda, b, ldb, m, n, k, bm, bn, k0 + BK, t, trans);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Acc fa[TM], fb[TN];
      read_fragments(fa, fb, as[s][kk], bs[s][kk], row0, col0);
      outer_product(acc, fa, fb);
    }
    if (more) {
      stash(staged, as[s ^ 1], bs[s ^ 1], t, trans);
      __syncthreads();
      s ^= 1;
    }
  }
#endif
#endif  // SIMT_ASYNC
#if SPLIT > 1
  __shared__ unsigned arrived;
  if (!gather_parts(acc, work, counters, arrived, (z * gridDim.y + blockIdx.y) * gridDim.x +
                    blockIdx.x, part, t))
    return;
#endif
  // C 16-byte aligned (this batch's matrix and every column): runs of 4 rows in one store
  if ((unsigned long long)c % 16 == 0 && ldc % 4 == 0)
    store_tile<true>(c, ldc, m, n, bm + row0, bn + col0, acc, alpha, beta);
  else
    store_tile<false>(c, ldc, m, n, bm + row0, bn + col0, acc, alpha, beta);
}

#endif
