// grids_2d_3d.cu: every special register that locates a thread: threadIdx, blockIdx, blockDim
// and gridDim in x, y and z, on 2D and 3D grids, plus the warp size and lane id.
//
// grid_coords_2d(int* out, int width, int height)
//   launch: grid = ((width + 15) / 16, (height + 7) / 8), block = (16, 8), dynamic shared = 0
//   for x < width, y < height (x = blockIdx.x*16 + threadIdx.x, y likewise):
//   out[(y*width + x)*4 + 0..3] = x, y, blockIdx.x + blockIdx.y * gridDim.x,
//   threadIdx.x + threadIdx.y * blockDim.x
// grid_coords_3d(int* out, int nx, int ny, int nz)
//   launch: grid = ((nx + 7) / 8, (ny + 3) / 4, (nz + 1) / 2), block = (8, 4, 2),
//           dynamic shared = 0
//   for cells in range, with linear id c = (z*ny + y)*nx + x:
//   out[c*4 + 0] = c; out[c*4 + 1] = the thread's linear index in its block
//   (threadIdx.x + blockDim.x*(threadIdx.y + blockDim.y*threadIdx.z)); out[c*4 + 2] = its
//   lane (that linear index % warpSize, 32); out[c*4 + 3] =
//   the block's linear index blockIdx.x + gridDim.x*(blockIdx.y + gridDim.y*blockIdx.z)
// grid_stride_3d(float* out, int nx, int ny, int nz)
//   launch: any 3D grid and block, e.g. grid = (2, 2, 2), block = (4, 4, 4)
//   out[(z*ny + y)*nx + x] = x + 10*y + 100*z for every cell, each axis covered by its own
//   grid-stride loop

extern "C" __global__ void grid_coords_2d(int* out, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    int* o = out + (y * width + x) * 4;
    o[0] = x;
    o[1] = y;
    o[2] = blockIdx.x + blockIdx.y * gridDim.x;
    o[3] = threadIdx.x + threadIdx.y * blockDim.x;
}

extern "C" __global__ void grid_coords_3d(int* out, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz)
        return;
    int c = (z * ny + y) * nx + x;
    int linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[c * 4 + 0] = c;
    out[c * 4 + 1] = linear;
    out[c * 4 + 2] = linear % warpSize;
    out[c * 4 + 3] = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

extern "C" __global__ void grid_stride_3d(float* out, int nx, int ny, int nz)
{
    for (int z = blockIdx.z * blockDim.z + threadIdx.z; z < nz; z += blockDim.z * gridDim.z)
        for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < ny; y += blockDim.y * gridDim.y)
            for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < nx;
                 x += blockDim.x * gridDim.x)
                out[(z * ny + y) * nx + x] = x + 10.0f * y + 100.0f * z;
}
