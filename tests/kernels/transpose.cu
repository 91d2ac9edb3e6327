// transpose.cu: out = in^T for a row-major rows x cols float matrix: a naive kernel (coalesced
// reads, strided writes) and a tiled one through a 32x33 shared tile (the padding column
// avoids bank conflicts) with 32x8 blocks, each thread moving 4 elements.
//
// transpose_naive(const float* in, float* out, int rows, int cols)
//   launch: grid = ((cols + 15) / 16, (rows + 15) / 16), block = (16, 16), dynamic shared = 0
//   out[c * rows + r] = in[r * cols + c]
// transpose_shared_padded(const float* in, float* out, int rows, int cols)
//   launch: grid = ((cols + 31) / 32, (rows + 31) / 32), block = (32, 8), dynamic shared = 0
//   out[c * rows + r] = in[r * cols + c]

#define TILE 32
#define ROWS_PER_PASS 8

extern "C" __global__ void transpose_naive(const float* in, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols)
        out[c * rows + r] = in[r * cols + c];
}

extern "C" __global__ void transpose_shared_padded(const float* in, float* out, int rows,
                                                   int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS_PER_PASS)
        if (r0 + j < rows && c < cols)
            tile[threadIdx.y + j][threadIdx.x] = in[(r0 + j) * cols + c];
    __syncthreads();
    // Swap the block's coordinates: this block writes the transposed tile.
    int oc = blockIdx.y * TILE + threadIdx.x;  // a column of out is a row of in
    int or0 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS_PER_PASS)
        if (or0 + j < cols && oc < rows)
            out[(or0 + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
}
