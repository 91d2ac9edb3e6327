// warp_tiles.cu: warp operations of sub-warp tiles (what cooperative groups' tiled_partition<4>
// compiles to): each lane's member mask names its own 4-lane tile, 0xF << (lane & ~3), so the
// masks differ across the warp, and each tile completes on its own (PTX: a thread waits for
// the threads of its own membermask). Odd tiles first run a loop of tile-index trips, so the
// tiles of a warp reach the operations at different times.
//
// tile_ops(const int* x, int* out, int n)
//   launch: grid = (n / 128,), block = (128,), dynamic shared = 0; n a multiple of 128
//   with t = the 4-lane tile of element i (lanes 4t..4t+3 of the warp), out is 5 arrays of n:
//   out[0n+i] sum of x over the tile (__shfl_xor_sync 2 then 1, width 4)
//   out[1n+i] __ballot_sync(mask, x[i] odd): bits of the tile's lanes with odd x, at their
//             lane positions in the warp
//   out[2n+i] __all_sync(mask, x[i] > 0) (1 or 0)
//   out[3n+i] __shfl_sync(mask, x[i], 3, 4): x of the tile's last lane
//   out[4n+i] the loop trips of the lane: (lane / 4) for odd tiles, 0 for even ones

extern "C" __global__ void tile_ops(const int* x, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x % 32;
    unsigned tile = lane / 4;
    unsigned mask = 0xFu << (lane & ~3u);
    int trips = 0;
    if (tile & 1) {
        for (unsigned k = 0; k < tile; ++k)
            trips += 1 + (x[i] & 0);        // data-dependent: not folded away
    }
    int v = x[i];
    v += __shfl_xor_sync(mask, v, 2, 4);
    v += __shfl_xor_sync(mask, v, 1, 4);
    out[0 * n + i] = v;
    out[1 * n + i] = (int)__ballot_sync(mask, x[i] & 1);
    out[2 * n + i] = __all_sync(mask, x[i] > 0);
    out[3 * n + i] = __shfl_sync(mask, x[i], 3, 4);
    out[4 * n + i] = trips;
}
