// warp_vote.cu: warp votes, matches and reductions (sm_80+ for __reduce_*_sync). One thread
// per element, full warps (n a multiple of 32 and of the block size).
//
// warp_votes(const int* x, unsigned* out, int n)
//   launch: grid = (n / 128,), block = (128,), dynamic shared = 0
//   with p = x[i] > 0, full = 0xffffffff; out is 6 arrays of n, out[k*n + i]:
//   k=0 __all_sync(full, p) (1 or 0)
//   k=1 __any_sync(full, p) (1 or 0)
//   k=2 __ballot_sync(full, p): bit l set for each lane l of the warp with p
//   k=3 __activemask() at a convergent point: expected 0xffffffff (PTX promises only that the
//       mask holds the calling lane and is a subset of the lanes converged there)
//   k=4 inside `if (p)`: __ballot_sync(m, x[i] & 1) with m = the k=2 ballot: bits of lanes with
//       p and odd x; lanes without p do not run it and store 0
//   k=5 __popc of the k=2 ballot
// warp_match(const int* x, unsigned* out, int n)
//   launch: as warp_votes
//   out[i] = __match_any_sync(full, x[i]): the mask of lanes of the warp whose x equals lane's;
//   out[n + i] = __match_all_sync(full, x[i] / 1000, &pred) with pred stored in out[2n + i]
//   (mask = full if all lanes' x/1000 agree, else 0; pred 1 or 0)
// warp_reduce_intrinsics(const unsigned* x, unsigned* out, int n)
//   launch: as warp_votes
//   for each warp, at out[k*n + i] for all its lanes: k=0 __reduce_add_sync (sum mod 2**32),
//   k=1 __reduce_min_sync, k=2 __reduce_max_sync (unsigned), k=3 __reduce_and_sync,
//   k=4 __reduce_or_sync, k=5 __reduce_xor_sync, k=6 __reduce_min_sync on (int)x (signed),
//   k=7 __reduce_add_sync over the odd lanes only (mask 0xaaaaaaaa; even lanes store 0)

extern "C" __global__ void warp_votes(const int* x, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned full = 0xffffffffu;
    int p = x[i] > 0;
    out[0 * n + i] = __all_sync(full, p);
    out[1 * n + i] = __any_sync(full, p);
    unsigned ballot = __ballot_sync(full, p);
    out[2 * n + i] = ballot;
    out[3 * n + i] = __activemask();
    unsigned inner = 0;
    if (p)
        inner = __ballot_sync(ballot, x[i] & 1);
    out[4 * n + i] = inner;
    out[5 * n + i] = __popc(ballot);
}

extern "C" __global__ void warp_match(const int* x, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned full = 0xffffffffu;
    out[i] = __match_any_sync(full, x[i]);
    int pred;
    out[n + i] = __match_all_sync(full, x[i] / 1000, &pred);
    out[2 * n + i] = pred;
}

extern "C" __global__ void warp_reduce_intrinsics(const unsigned* x, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned full = 0xffffffffu;
    unsigned v = x[i];
    out[0 * n + i] = __reduce_add_sync(full, v);
    out[1 * n + i] = __reduce_min_sync(full, v);
    out[2 * n + i] = __reduce_max_sync(full, v);
    out[3 * n + i] = __reduce_and_sync(full, v);
    out[4 * n + i] = __reduce_or_sync(full, v);
    out[5 * n + i] = __reduce_xor_sync(full, v);
    out[6 * n + i] = (unsigned)__reduce_min_sync(full, (int)v);
    unsigned odd_sum = 0;
    if (threadIdx.x & 1)
        odd_sum = __reduce_add_sync(0xaaaaaaaau, v);
    out[7 * n + i] = odd_sum;
}
