// stencil_3d.cu: one 7-point stencil sweep on an nx x ny x nz grid (x fastest), one thread per
// cell on a 3D grid of 3D blocks (blockIdx.z, blockDim.z, threadIdx.z all in use).
//
// stencil_3d_7pt(const double* in, double* out, int nx, int ny, int nz, double c0, double c1)
//   launch: grid = ((nx + 7) / 8, (ny + 7) / 8, (nz + 3) / 4), block = (8, 8, 4),
//           dynamic shared = 0
//   interior cells: out = c0 * in[z][y][x] + c1 * (((((in[x-1] + in[x+1]) + in[y-1]) + in[y+1])
//   + in[z-1]) + in[z+1]) (neighbours along each axis, summed in that order); boundary cells
//   copy in. Index: (z * ny + y) * nx + x.

extern "C" __global__ void stencil_3d_7pt(const double* in, double* out, int nx, int ny, int nz,
                                          double c0, double c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz)
        return;
    long long sx = 1, sy = nx, sz = (long long)nx * ny;
    long long i = z * sz + y * sy + x;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        out[i] = in[i];
        return;
    }
    double neighbours = in[i - sx] + in[i + sx];
    neighbours += in[i - sy];
    neighbours += in[i + sy];
    neighbours += in[i - sz];
    neighbours += in[i + sz];
    out[i] = c0 * in[i] + c1 * neighbours;
}
