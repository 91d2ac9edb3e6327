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
