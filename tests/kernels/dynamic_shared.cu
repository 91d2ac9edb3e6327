// dynamic_shared.cu: kernels whose shared memory is sized at launch (extern __shared__), one of
// them carving several differently typed arrays out of the one dynamic buffer, and one mixing
// static and dynamic shared memory. Extern __shared__ arrays of one name must have one type in
// a module (they all alias the start of the dynamic region), so each kernel names its own.
//
// reverse_block(int* data, int n)
//   launch: grid = ((n + b - 1) / b,), block = (b,), dynamic shared = b * sizeof(int)
//   reverses each tile of b elements in place: data[k*b + t] = old data[k*b + (b - 1 - t)];
//   the last tile must be full (n a multiple of b)
// carve_dynamic(const double* x, const int* y, double* out, int n)
//   launch: grid = ((n + b - 1) / b,), block = (b,),
//           dynamic shared = b * sizeof(double) + b * sizeof(int) + b (a byte array last)
//   in the block's tile: out[i] = fma(x[i], y[j], (double)flag[j]) where j is the tile's
//   element mirrored (j = tile start + b - 1 - t, which must be < n: n a multiple of b) and
//   flag[j] = (y[j] & 1) (stored as unsigned char)
// static_and_dynamic(const float* x, float* out, int n)
//   launch: grid = ((n + b - 1) / b,), block = (b,) with b <= 256,
//           dynamic shared = b * sizeof(float)
//   out[i] = x[i] - mean of the block's tile (elements past n count as 0 in the sum, and the
//   mean divides by b): a static 256-entry scratch array reduces (fixed tree, b a power of
//   two) while the dynamic buffer keeps the tile

extern "C" __global__ void reverse_block(int* data, int n)
{
    extern __shared__ int tile[];
    int t = threadIdx.x, b = blockDim.x;
    int base = blockIdx.x * b;
    tile[t] = data[base + t];
    __syncthreads();
    data[base + t] = tile[b - 1 - t];
}

extern "C" __global__ void carve_dynamic(const double* x, const int* y, double* out, int n)
{
    extern __shared__ double dyn[];
    int t = threadIdx.x, b = blockDim.x;
    int base = blockIdx.x * b;
    double* xs = dyn;
    int* ys = (int*)(xs + b);
    unsigned char* flags = (unsigned char*)(ys + b);
    xs[t] = x[base + t];
    ys[t] = y[base + t];
    flags[t] = (unsigned char)(y[base + t] & 1);
    __syncthreads();
    int j = b - 1 - t;
    out[base + t] = xs[t] * ys[j] + (double)flags[j];
}

extern "C" __global__ void static_and_dynamic(const float* x, float* out, int n)
{
    __shared__ float scratch[256];
    extern __shared__ float values[];
    int t = threadIdx.x, b = blockDim.x;
    int i = blockIdx.x * b + t;
    values[t] = i < n ? x[i] : 0.0f;
    scratch[t] = values[t];
    __syncthreads();
    for (int h = b / 2; h > 0; h >>= 1) {
        if (t < h)
            scratch[t] += scratch[t + h];
        __syncthreads();
    }
    if (i < n)
        out[i] = values[t] - scratch[0] / b;
}
