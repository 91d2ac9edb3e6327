/* softmax.c: numerically stable row-wise softmax (softmax.cu's softmax_rows_warp): the row
 * maximum, then y = exp(x - max) with its sum in the same pass, then y *= 1 / sum. */

#include <math.h>
#include <stddef.h>

void softmax_rows(const float *restrict x, float *restrict y, int rows, int cols)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int c = 0; c < cols; ++c)
            m = fmaxf(m, xr[c]);
        float s = 0.0f;
        for (int c = 0; c < cols; ++c) {
            yr[c] = expf(xr[c] - m);
            s += yr[c];
        }
        float inv = 1.0f / s;
        for (int c = 0; c < cols; ++c)
            yr[c] *= inv;
    }
}
