/* transpose.c: out = in^T for a row-major rows x cols float matrix (transpose.cu's
 * transpose_shared_padded), in 32x32 tiles so that both the reads and the strided writes of
 * a tile stay in cache. */

#include <stddef.h>

#define TILE 32

void transpose(const float *restrict in, float *restrict out, int rows, int cols)
{
#pragma omp parallel for schedule(static)
    for (int r0 = 0; r0 < rows; r0 += TILE) {
        int r1 = r0 + TILE < rows ? r0 + TILE : rows;
        for (int c0 = 0; c0 < cols; c0 += TILE) {
            int c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (int r = r0; r < r1; ++r)
                for (int c = c0; c < c1; ++c)
                    out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
        }
    }
}
