// spmv_csr.cu: sparse matrix-vector product y = A x with A in compressed sparse row form
// (row_ptr[rows + 1], col_idx[nnz], values[nnz]): the scalar kernel (one thread per row) and
// the vector kernel (one warp per row with a shuffle reduction), as in Bell & Garland 2009.
//
// spmv_csr_scalar(const int* row_ptr, const int* col_idx, const float* values, const float* x,
//                 float* y, int rows)
//   launch: grid = ((rows + 127) / 128,), block = (128,), dynamic shared = 0
//   y[r] = sum over k in [row_ptr[r], row_ptr[r+1]) of values[k] * x[col_idx[k]], in k order
//   with fmaf
// spmv_csr_vector(const int* row_ptr, const int* col_idx, const float* values, const float* x,
//                 float* y, int rows)
//   launch: grid = ((rows + 3) / 4,), block = (128,), dynamic shared = 0
//   same y; lane l of the row's warp sums k = row_ptr[r] + l, + 32, ... with fmaf, then a
//   __shfl_xor_sync butterfly (masks 16, 8, 4, 2, 1); lane 0 writes

extern "C" __global__ void spmv_csr_scalar(const int* row_ptr, const int* col_idx,
                                           const float* values, const float* x, float* y,
                                           int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float acc = 0.0f;
    for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k)
        acc = fmaf(values[k], x[col_idx[k]], acc);
    y[r] = acc;
}

extern "C" __global__ void spmv_csr_vector(const int* row_ptr, const int* col_idx,
                                           const float* values, const float* x, float* y,
                                           int rows)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows)
        return;
    float acc = 0.0f;
    for (int k = row_ptr[r] + lane; k < row_ptr[r + 1]; k += 32)
        acc = fmaf(values[k], x[col_idx[k]], acc);
    for (int m = 16; m > 0; m >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, m);
    if (lane == 0)
        y[r] = acc;
}
