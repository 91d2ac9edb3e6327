// stencil_2d.cu: one Jacobi sweep of the 2D 5-point Laplacian stencil on a row-major
// height x width grid, with a 16x16 tile plus a one-cell halo staged in shared memory.
//
// stencil_2d_5pt(const float* in, float* out, int width, int height)
//   launch: grid = ((width + 15) / 16, (height + 15) / 16), block = (16, 16),
//           dynamic shared = 0 (block must be 16x16)
//   out[y][x] = 0.25 * (in[y-1][x] + in[y+1][x] + in[y][x-1] + in[y][x+1]) for interior cells
//   (0 < x < width-1, 0 < y < height-1); boundary cells copy in[y][x]. The sum is evaluated
//   as ((up + down) + left) + right, then scaled.

#define T 16

extern "C" __global__ void stencil_2d_5pt(const float* in, float* out, int width, int height)
{
    __shared__ float tile[T + 2][T + 2];
    int x = blockIdx.x * T + threadIdx.x;
    int y = blockIdx.y * T + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    bool inside = x < width && y < height;
    tile[ty][tx] = inside ? in[y * width + x] : 0.0f;
    // Edge threads of the block also load the halo cell just outside their side.
    if (threadIdx.x == 0)
        tile[ty][0] = x > 0 && y < height ? in[y * width + x - 1] : 0.0f;
    if (threadIdx.x == T - 1)
        tile[ty][T + 1] = x + 1 < width && y < height ? in[y * width + x + 1] : 0.0f;
    if (threadIdx.y == 0)
        tile[0][tx] = y > 0 && x < width ? in[(y - 1) * width + x] : 0.0f;
    if (threadIdx.y == T - 1)
        tile[T + 1][tx] = y + 1 < height && x < width ? in[(y + 1) * width + x] : 0.0f;
    __syncthreads();
    if (!inside)
        return;
    float v;
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1)
        v = tile[ty][tx];
    else
        v = 0.25f * (((tile[ty - 1][tx] + tile[ty + 1][tx]) + tile[ty][tx - 1]) + tile[ty][tx + 1]);
    out[y * width + x] = v;
}
