/* stencil.c: one Jacobi sweep of the 5-point Laplacian on a row-major height x width grid
 * (stencil_2d.cu's stencil_2d_5pt): interior cells get the average of their four neighbours,
 * summed in the kernel's order ((up + down) + left) + right; boundary cells are copied. */

#include <string.h>

void stencil_2d_5pt(const float *restrict in, float *restrict out, int width, int height)
{
#pragma omp parallel for schedule(static)
    for (int y = 0; y < height; ++y) {
        const float *row = in + (size_t)y * width;
        float *o = out + (size_t)y * width;
        if (y == 0 || y == height - 1 || width < 3) {
            memcpy(o, row, sizeof(float) * (size_t)width);
            continue;
        }
        const float *up = row - width, *down = row + width;
        o[0] = row[0];
        for (int x = 1; x < width - 1; ++x)
            o[x] = 0.25f * (((up[x] + down[x]) + row[x - 1]) + row[x + 1]);
        o[width - 1] = row[width - 1];
    }
}
