// The portable GEMM's warpgroup kernel (GEMM_MMA 2): sm_90a's wgmma.mma_async, f16 / bf16 in,
// f32 accumulate. ptxport/blas/portable.py compiles it after gemm.cu (whose macros, types,
// store_c, block_tile, shared_address and load_stage it uses: load_stage places the chunks
// by gemm.cu's wg_swz in this kernel), for sm_90a: ptxport's NVPTX
// passes wgmma through to the H100's tensor cores, its CPU target runs it on warp gangs
// (codegen/targets/cpu/gang/wgmma.py), SPIR-V and AMDGPU lane by lane.
//
// WM x WN warpgroups of 128 threads; warpgroup (gm, gn) computes the (BM / WM) x (BN / WN)
// part of the block tile with one m64nWG_Nk16 wgmma per 64 of its rows and 16 of k, A and B
// read by the tensor cores straight from shared memory through matrix descriptors (PTX ISA
// 9.7.15.5.1), no fragments in registers. Every thread copies global memory to the stage
// tiles with cp.async (gemm.cu's load_stage: 16-byte chunks, zero-filled at the edges), in a
// STAGES-deep ring with one cp.async group and one barrier per k-step of BK = 64.
//
// Stage tiles keep each stored matrix's contiguous dimension in 128-byte rows (64 elements),
// 8 rows to a 1024-byte atom, chunk c of row r stored at chunk c ^ (r % 8): the 128-byte
// swizzle (descriptor mode 1), which the tensor cores undo from the shared address bits, and
// under which the 8 rows of a chunk column lie in 8 different bank groups. Where k is the
// contiguous dimension (op(A) transposed, op(B) not) the tile is K-major: one row per row of
// A (column of B), SBO 1024 to the next 8; else MN-major: one row per k, in blocks of 64 of
// m (n) BK rows long, LBO = BK * 128 bytes from one block to the next, SBO 1024 from one 8
// rows of k to the next (imm-trans 1). A 16-wide k step starts 32 bytes into a K-major row,
// 16 rows (2048 bytes) into an MN-major block.
//
// AHEAD 1: one wgmma group is left in flight at the end of a k-step (wgmma.wait_group 1), so
// the next step's copies and barrier overlap the tensor cores' work; the stage refilled at
// step kt is then that of step kt - 2, which every warpgroup has waited for before the
// barrier: copies run STAGES - 1 - AHEAD steps ahead.

#if GEMM_MMA == 2
#if BK != 64
#error "wgmma: BK must be 64 (one 128-byte swizzle row of 16-bit k)"
#endif
#if TRANS_A < 0 || TRANS_B < 0
#error "wgmma: the transposes must be fixed at compile time (the instruction's imm-trans)"
#endif
#if STAGES < 2 + AHEAD
#error "wgmma: STAGES must be at least 2 (3 with AHEAD)"
#endif

#define WG_M (BM / WM)                        // rows of a warpgroup's part
#define WG_N (BN / WN)                        // its columns: the wgmma's N
#define WG_MI (WG_M / 64)                     // wgmmas a warpgroup issues per 16 of k
#define WG_REGS (WG_N / 2)                    // f32 accumulators a thread per wgmma
#define WG_LAG AHEAD                          // wgmma groups left in flight per k-step
// UNROLL_K 0: a k-step's four 16-wide wgmma steps as a loop (the CPU target expands each
// wgmma into hundreds of vector operations: unrolled, LLVM takes minutes over them)
#ifndef UNROLL_K
#define UNROLL_K 1
#endif
#if UNROLL_K
#define WG_UNROLL_K _Pragma("unroll")
#else
#define WG_UNROLL_K _Pragma("unroll 1")
#endif
#if WG_M % 64 != 0 || BN % 64 != 0 || BM % 64 != 0
#error "wgmma: BM / WM, BM and BN must be multiples of 64"
#endif

// A matrix descriptor (128-byte swizzle) of the operand starting at `p`.
__device__ __forceinline__ unsigned long long wg_desc(const u16 *p, bool mn_major) {
  const unsigned long long lbo = mn_major ? BK * 128 : 16, sbo = 1024;
  return (unsigned long long)((shared_address(p) & 0x3FFFF) >> 4) | (lbo >> 4) << 16 |
         (sbo >> 4) << 32 | 1ull << 62;
}

// The accumulator operands of one wgmma: "%0, ..., %(WG_REGS - 1)" and d[0 .. WG_REGS - 1].
#define WG_R32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, " \
  "%17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WG_R64 WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, " \
  "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WG_R128 WG_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, " \
  "%77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, " \
  "%95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, " \
  "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, " \
  "%124, %125, %126, %127"
#define WG_F8(x) "+f"(d[x]), "+f"(d[x + 1]), "+f"(d[x + 2]), "+f"(d[x + 3]), "+f"(d[x + 4]), \
  "+f"(d[x + 5]), "+f"(d[x + 6]), "+f"(d[x + 7])
#define WG_F32(x) WG_F8(x), WG_F8(x + 8), WG_F8(x + 16), WG_F8(x + 24)
#if WG_N == 64
#define WG_DREGS WG_R32
#define WG_SHAPE "m64n64k16"
#define WG_OPERANDS "%32, %33, p, 1, 1, "
#define WG_SCALE "%34"
#define WG_D WG_F32(0)
#elif WG_N == 128
#define WG_DREGS WG_R64
#define WG_SHAPE "m64n128k16"
#define WG_OPERANDS "%64, %65, p, 1, 1, "
#define WG_SCALE "%66"
#define WG_D WG_F32(0), WG_F32(32)
#elif WG_N == 256
#define WG_DREGS WG_R128
#define WG_SHAPE "m64n256k16"
#define WG_OPERANDS "%128, %129, p, 1, 1, "
#define WG_SCALE "%130"
#define WG_D WG_F32(0), WG_F32(32), WG_F32(64), WG_F32(96)
#else
#error "wgmma: BN / WN must be 64, 128 or 256"
#endif
// imm-trans-a / -b: 1 where the operand is MN-major
#if TRANS_A
#define WG_IMM_A "0, "
#else
#define WG_IMM_A "1, "
#endif
#if TRANS_B
#define WG_IMM_B "1"
#else
#define WG_IMM_B "0"
#endif

// d += A B for one 64 x WG_N x 16 step (scale-d 1: d holds the sums so far).
__device__ __forceinline__ void wg_mma(float *d, unsigned long long da, unsigned long long db,
                                       int one) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " WG_SCALE ", 0;\n"
               "wgmma.mma_async.sync.aligned." WG_SHAPE ".f32." MMA_IN "." MMA_IN
               " {" WG_DREGS "}, " WG_OPERANDS WG_IMM_A WG_IMM_B ";\n}\n"
               : WG_D : "l"(da), "l"(db), "r"(one) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across the wgmma waits.
__device__ __forceinline__ void wg_fence_operands(float (*acc)[WG_REGS]) {
#pragma unroll
  for (int x = 0; x < WG_MI; ++x)
#pragma unroll
    for (int i = 0; i < WG_REGS; ++i) asm volatile("" : "+f"(acc[x][i]) :: "memory");
}

// The warpgroup's wgmmas of one k-step from stage tiles `as`, `bs`, as one wgmma group.
__device__ __forceinline__ void wg_step(float (*acc)[WG_REGS], const u16 *as, const u16 *bs,
                                        int gm, int gn, int one) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  WG_UNROLL_K
  for (int kk = 0; kk < BK; kk += 16) {
    const int j0 = gn * WG_N;
    const unsigned long long db = TRANS_B ? wg_desc(bs + (j0 / 64) * (BK * 64) + kk * 64, true)
                                          : wg_desc(bs + j0 * 64 + kk, false);
#pragma unroll
    for (int x = 0; x < WG_MI; ++x) {
      const int i0 = gm * WG_M + x * 64;
      const unsigned long long da = TRANS_A ? wg_desc(as + i0 * 64 + kk, false)
                                            : wg_desc(as + (i0 / 64) * (BK * 64) + kk * 64, true);
      wg_mma(acc[x], da, db, one);
    }
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
ptxport_gemm(int m, int n, int k, float alpha, const In *a, int lda, long long stride_a,
             const In *b, int ldb, long long stride_b, float beta, Out *c, int ldc,
             long long stride_c, int trans) {
  // STAGES x (A tile, B tile) from the first 1024-byte boundary of the shared address (the
  // swizzle's pattern repeats every 1024 bytes): the host adds 1024 bytes for the slack
  extern __shared__ __align__(1024) u16 wg_raw[];
  u16 *smem = wg_raw + ((1024 - (shared_address(wg_raw) & 1023)) & 1023) / 2;
  const int t = threadIdx.x, group = t / 128, gm = group % WM, gn = group / WM;
  int tile_m, tile_n;
  block_tile(tile_m, tile_n);
  const int bm = tile_m * BM, bn = tile_n * BN;
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;

  const float zero = (float)(m < 0);   // not a constant: see gemm.cu's SIMT kernel
  const int one = m >= 0;
  float acc[WG_MI][WG_REGS];
#pragma unroll
  for (int x = 0; x < WG_MI; ++x)
#pragma unroll
    for (int i = 0; i < WG_REGS; ++i) acc[x][i] = zero;

  // k-step kt lives in stage kt % STAGES; each step commits one cp.async group (empty past
  // the end), so wait_group AHEADS - 1 means "step kt has landed"
#define WG_AHEADS (STAGES - 1 - WG_LAG)
  const int steps = (k + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < WG_AHEADS; ++s) {
    if (s < steps) load_stage(smem, s, a, lda, b, ldb, m, n, k, bm, bn, s * BK, t, trans);
    asm volatile("cp.async.commit_group;");
  }
  for (int kt = 0; kt < steps; ++kt) {
    asm volatile("cp.async.wait_group %0;" :: "n"(WG_AHEADS - 1));
    // this thread's copies visible to the tensor cores (the async proxy), then everyone's;
    // every warpgroup's wgmmas of step kt - 1 - WG_LAG are done: its stage is free
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int next = kt + WG_AHEADS;
    if (next < steps)
      load_stage(smem, next % STAGES, a, lda, b, ldb, m, n, k, bm, bn, next * BK, t, trans);
    asm volatile("cp.async.commit_group;");
    const u16 *as = smem + (kt % STAGES) * STAGE_ELEMS;
    wg_step(acc, as, as + A_TILE, gm, gn, one);
    asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(WG_LAG) : "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_all;");
  wg_fence_operands(acc);
  // accumulator i of thread t: row 16 w + g + 8 ((i / 2) % 2), column 8 (i / 4) + 2 q + i % 2
  // of the wgmma's 64 x WG_N (w the warp in the group, g = lane / 4, q = lane % 4)
  const int w = t % 128 / 32, g = t % 32 / 4, q = t % 4;
#pragma unroll
  for (int x = 0; x < WG_MI; ++x)
#pragma unroll
    for (int i = 0; i < WG_REGS; ++i)
      store_c(c, ldc, m, n, bm + gm * WG_M + x * 64 + 16 * w + g + 8 * (i >> 1 & 1),
              bn + gn * WG_N + 8 * (i >> 2) + 2 * q + (i & 1), acc[x][i], alpha, beta);
}
#endif
