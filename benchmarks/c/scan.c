/* scan.c: prefix sums of each tile of `tile` elements, as the block scans of the corpus
 * compute them: exclusive with the tile's total (scan_blelloch.cu's scan_exclusive_blelloch)
 * and inclusive in float (scan_warp.cu's scan_block_inclusive). Tiles are independent, so
 * OpenMP splits them across cores; inside a tile the running sum is sequential. */

void scan_exclusive_tiles_i32(const int *restrict x, int *restrict y, int *restrict tile_sums,
                              long n, int tile)
{
    long tiles = (n + tile - 1) / tile;
#pragma omp parallel for schedule(static)
    for (long k = 0; k < tiles; ++k) {
        long end = (k + 1) * tile < n ? (k + 1) * tile : n;
        int s = 0;
        for (long i = k * tile; i < end; ++i) {
            y[i] = s;
            s += x[i];
        }
        tile_sums[k] = s;
    }
}

void scan_inclusive_tiles_f32(const float *restrict x, float *restrict y, long n, int tile)
{
    long tiles = (n + tile - 1) / tile;
#pragma omp parallel for schedule(static)
    for (long k = 0; k < tiles; ++k) {
        long end = (k + 1) * tile < n ? (k + 1) * tile : n;
        float s = 0.0f;
        for (long i = k * tile; i < end; ++i) {
            s += x[i];
            y[i] = s;
        }
    }
}

/* The tree the kernel runs (scan_blelloch.cu's scan_exclusive_blelloch), per tile: the tile
 * copied to a buffer (elements past n as 0), an up-sweep of log2(tile) levels building
 * partial sums in place, the total taken out and replaced by 0, a down-sweep of as many
 * levels, the buffer copied out. 2 * tile adds and about 3 * tile loads a tile, against the
 * running sum's tile; cpu_kernels.py compares ptxport with it beside scan_exclusive_tiles_i32
 * ("the same algorithm in C"). `tile` is a power of two; unsigned adds wrap as the kernel's.
 * bi is written ai + offset (the kernel's offset * (2t + 2) - 1, the same index): gcc
 * vectorises the levels of stride 1 and 2 then, and the whole took 11 ms on one core of the
 * development machine against 34 ms written as the kernel writes it (4M ints). */
void scan_blelloch_tiles_i32(const int *restrict x, int *restrict y, int *restrict tile_sums,
                             long n, int tile)
{
    long tiles = (n + tile - 1) / tile;
#pragma omp parallel
    {
        unsigned temp[tile];
#pragma omp for schedule(static)
        for (long k = 0; k < tiles; ++k) {
            long base = k * tile;
            for (int j = 0; j < tile; ++j)
                temp[j] = base + j < n ? (unsigned)x[base + j] : 0u;
            int offset = 1;
            for (int d = tile >> 1; d > 0; d >>= 1) {
                for (int t = 0; t < d; ++t) {
                    int ai = offset * (2 * t + 1) - 1;
                    temp[ai + offset] += temp[ai];
                }
                offset <<= 1;
            }
            tile_sums[k] = (int)temp[tile - 1];
            temp[tile - 1] = 0;
            for (int d = 1; d < tile; d <<= 1) {
                offset >>= 1;
                for (int t = 0; t < d; ++t) {
                    int ai = offset * (2 * t + 1) - 1, bi = ai + offset;
                    unsigned left = temp[ai];
                    temp[ai] = temp[bi];
                    temp[bi] += left;
                }
            }
            for (int j = 0; j < tile && base + j < n; ++j)
                y[base + j] = (int)temp[j];
        }
    }
}
