// matvec.cu: dense matrix-vector products y = A x for a row-major rows x cols matrix: one
// thread per row, one warp per row (shuffle reduction), and the transposed product
// y = A^T x with one thread per column (coalesced).
//
// gemv_thread_per_row(const float* A, const float* x, float* y, int rows, int cols)
//   launch: grid = ((rows + 127) / 128,), block = (128,), dynamic shared = 0
//   y[r] = sum_c A[r][c] * x[c], accumulated in c order with fmaf
// gemv_warp_per_row(const float* A, const float* x, float* y, int rows, int cols)
//   launch: grid = ((rows + 7) / 8,), block = (256,), dynamic shared = 0
//   same y; lane l sums columns l, l+32, ... with fmaf, then __shfl_down_sync tree (offsets
//   16, 8, 4, 2, 1); lane 0 writes
// gemv_transposed_f64(const double* A, const double* x, double* y, int rows, int cols)
//   launch: grid = ((cols + 127) / 128,), block = (128,), dynamic shared = 0
//   y[c] = sum_r A[r][c] * x[r], accumulated in r order with fma

extern "C" __global__ void gemv_thread_per_row(const float* A, const float* x, float* y, int rows,
                                               int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const float* row = A + (long long)r * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c)
        acc = fmaf(row[c], x[c], acc);
    y[r] = acc;
}

extern "C" __global__ void gemv_warp_per_row(const float* A, const float* x, float* y, int rows,
                                             int cols)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows)
        return;
    const float* row = A + (long long)r * cols;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32)
        acc = fmaf(row[c], x[c], acc);
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0)
        y[r] = acc;
}

extern "C" __global__ void gemv_transposed_f64(const double* A, const double* x, double* y,
                                               int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    double acc = 0.0;
    for (int r = 0; r < rows; ++r)
        acc = fma(A[(long long)r * cols + c], x[r], acc);
    y[c] = acc;
}
