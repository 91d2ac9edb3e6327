// -- the lanes kernel (GEMM_LANES 1): the GEMM shaped for the CPU target ----------------------
// kernel_source appends this file to gemm.cu (whose types, store_c and load_a / load_b it
// uses) for the variant portable.py selects on cpu devices. The CPU target runs a warp's 32
// lanes as one gang of SIMD vectors (docs/cpu-target.md), so here a warp is a BLIS-like
// micro-kernel: lane l owns rows bm + l (+ 32, ...) of C, and each thread keeps TN columns of
// them in registers (per gang: RM x TN vector accumulators of 32 lanes). At each k, op(A)'s
// 32 rows are one contiguous vector (lane l's element, from shared memory) and op(B)'s TN
// values are warp-uniform (scalar broadcasts): RM x TN vector FMAs per k, no shuffles.
//
//   BM             a block is one warp (blockDim 32) and owns BM rows x BN columns of C: RM =
//                  BM / 32 rows a lane, 32 apart
//   BN, TN         the block's columns, swept TN at a time (BN a multiple of TN)
//   TM             the k loop's unrolling
//   BK             k is taken in panels of BK: op(A)'s BM x BK panel and op(B)'s BK x BN panel
//                  are packed into shared memory (A k-major: as[p][lane]; B column-major:
//                  bs[j][p]; widened to Acc, zero past k) whatever the transposes, and every
//                  column group of the block multiplies out of them; partial sums of C wait
//                  in shared memory (cs) between panels.
//
// The gang reads shared memory at lane-constant offsets (as[p][lane]: one vector; bs[j][p] for
// the TN columns: one base register at constant offsets BK apart), so each k-step is RM
// vector loads, TN broadcast loads and RM x TN FMAs. Rows: where m >= BM the last row tile is
// moved up to end at row m - 1 (it overlaps the one before, whose rows it computes again but
// does not store), so every lane's row is inside A; below BM rows the rows are clamped
// (m - 1). Columns past n read column n - 1 and are not stored.

#if BM % 32 != 0
#error "GEMM_LANES: BM must be a multiple of 32 (the warp's lanes, RM rows each)"
#endif
#define RM (BM / 32)
#if BN % TN != 0 || BK % 32 != 0
#error "GEMM_LANES: BN must be a multiple of TN and BK of 32"
#endif

// Pack op(A)'s rows row0 .. row0 + BM - 1 (lane l: row0 + l + 32 r, or min(l + 32 r, m - 1)
// where m < BM), k from k0, as k-major as[p][row]; zero past k. Each branch keeps the lanes' rows in a form
// the gang knows when compiling (a select between two forms would be classified at every
// load), and the test against k is the warp's alike.
__device__ __forceinline__ void pack_a(Acc (*as)[BM], const In *a, int lda, int m, int k,
                                       int row0, int k0, int lane, int trans) {
  if (EVEN || m >= BM) {   // (EVEN: m a multiple of BM, so at least BM)
#pragma unroll 4
    for (int p = 0; p < BK; ++p) {
      const int gp = k0 + p;
#pragma unroll
      for (int r = 0; r < RM; ++r)
        as[p][r * 32 + lane] = EVEN || gp < k ?
            to_acc<IN_KIND>(load_a(a, lda, m, k, row0 + r * 32 + lane, gp, trans)) : (Acc)0;
    }
  } else {
#pragma unroll 1
    for (int p = 0; p < BK; ++p) {
      const int gp = k0 + p;
#pragma unroll
      for (int r = 0; r < RM; ++r)
        as[p][r * 32 + lane] = EVEN || gp < k ?
            to_acc<IN_KIND>(load_a(a, lda, m, k, min(r * 32 + lane, m - 1), gp, trans)) :
            (Acc)0;
    }
  }
}

// Pack op(B)'s columns bn .. bn + BN - 1 (past n: column n - 1), k from k0, as bs[j][p]; zero
// past k. Lanes run along the stored matrix's contiguous dimension (k when B is not
// transposed, columns when it is), in loops the warp runs alike (a loop whose lanes leave it
// apart would leave the warp split for the rest of the kernel in the gang's analysis:
// docs/cpu-target.md); a panel inside k (`whole`) has no test per lane.
__device__ __forceinline__ void pack_b(Acc *bs, const In *b, int ldb, int n, int k, int bn,
                                       int k0, int lane, int trans) {
  const bool whole = EVEN || k0 + BK <= k;
  if (!TB) {
#pragma unroll 1
    for (int j = 0; j < BN; ++j) {
      const In *col = b + (long long)(EVEN ? bn + j : min(bn + j, n - 1)) * ldb + k0;
      if (whole) {
#pragma unroll
        for (int t = 0; t < BK / 32; ++t) bs[j * BK + t * 32 + lane] = to_acc<IN_KIND>(col[t * 32 + lane]);
      } else {
#pragma unroll
        for (int t = 0; t < BK / 32; ++t) {
          const int p = t * 32 + lane;
          bs[j * BK + p] = k0 + p < k ? to_acc<IN_KIND>(col[p]) : (Acc)0;
        }
      }
    }
  } else {
#pragma unroll 1
    for (int p = 0; p < BK; ++p) {
      const int gp = k0 + p;
      const In *row = b + (long long)min(gp, k - 1) * ldb;
#pragma unroll
      for (int t = 0; t < (BN + 31) / 32; ++t) {
        const int j = t * 32 + lane;
        if (BN % 32 == 0 || j < BN)
          bs[j * BK + p] = whole || gp < k ? to_acc<IN_KIND>(row[min(bn + j, n - 1)]) : (Acc)0;
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BM)
ptxport_gemm(int m, int n, int k, Acc alpha, const In *a, int lda, long long stride_a,
             const In *b, int ldb, long long stride_b, Acc beta, Out *c, int ldc,
             long long stride_c, int trans) {
  // the panels and partial sums in dynamic shared memory (TileConfig.dynamic_shared): on
  // the CPU target a block may have more than CUDA's 48 KiB of static shared memory
  extern __shared__ __align__(64) unsigned char lanes_smem[];
  Acc (*as)[BM] = reinterpret_cast<Acc (*)[BM]>(lanes_smem);
  Acc *bs = reinterpret_cast<Acc *>(lanes_smem) + BK * BM;
  Acc (*cs)[BM] = reinterpret_cast<Acc (*)[BM]>(bs + BN * BK);
  const int lane = threadIdx.x;
  // row tiles along the grid's x: consecutive blocks share B's panel (its columns)
  const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;
  // the last tile moved up to end at row m - 1 (EVEN: every tile whole)
  const int row0 = EVEN ? bm : min(bm, max(m - BM, 0));
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;
  const Acc zero = (Acc)(m < 0);   // not a constant: see the SIMT kernel

  // the partial sums start at zero in shared memory, and every panel adds to them: no test
  // of the first panel where the sums are read (NVRTC 13.0 made two copies of the column
  // loop for one, each with its accumulators, which the CPU target's gangs then kept in
  // registers at once, and the k loop's accumulators in memory)
#pragma unroll 1
  for (int j = 0; j < BN; ++j)
#pragma unroll
    for (int r = 0; r < RM; ++r) cs[j][r * 32 + lane] = zero;
  __syncwarp();
  // one panel at least: with k = 0, C = beta C
  const int panels = max((k + BK - 1) / BK, 1);
  for (int s = 0; s < panels; ++s) {
    const int k0 = s * BK;
    pack_a(as, a, lda, m, k, row0, k0, lane, trans);
    pack_b(bs, b, ldb, n, k, bn, k0, lane, trans);
    __syncwarp();
    for (int g = 0; g < BN; g += TN) {
      Acc acc[RM][TN];
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) acc[r][q] = cs[g + q][r * 32 + lane];
      const Acc *bq = bs + g * BK;
#pragma unroll TM
      for (int p = 0; p < BK; ++p) {
        Acc av[RM];
#pragma unroll
        for (int r = 0; r < RM; ++r) av[r] = as[p][r * 32 + lane];
#pragma unroll
        for (int q = 0; q < TN; ++q) {
          const Acc bv = bq[q * BK + p];
#pragma unroll
          for (int r = 0; r < RM; ++r) acc[r][q] += av[r] * bv;
        }
      }
      // (+ zero: the sums leave through an add, which makes a NaN canonical once, so the
      // FMAs need not: ir.analysis.nan_blind_registers)
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) cs[g + q][r * 32 + lane] = acc[r][q] + zero;
    }
    __syncwarp();
  }
  // C from the sums, after every loop: a branch that splits the warp inside them would leave
  // it split for the rest of the kernel in the gang's analysis (docs/cpu-target.md). Rows
  // of the tile before (the moved-up last tile) and columns past n are not stored.
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int i = row0 + r * 32 + lane;
    if (EVEN || (i >= bm && i < m)) {
#pragma unroll 1
      for (int j = 0; j < BN && (EVEN || bn + j < n); ++j)
        store_c(c, ldc, m, n, i, bn + j, cs[j][r * 32 + lane], alpha, beta);
    }
  }
}
