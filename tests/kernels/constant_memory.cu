// constant_memory.cu: data in the constant state space with static initializers: polynomial
// coefficients read uniformly by every thread, a lookup table indexed per thread, and a struct
// with mixed members. Constant memory is read-only to kernels.
//
// poly_eval(const float* x, float* y, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   y[i] = Horner evaluation of kPoly (degree 7, highest first) at x[i]:
//   y = ((((((c0*x + c1)*x + c2)*x + c3)*x + c4)*x + c5)*x + c6)*x + c7, one fma per step
// lut_lookup(const unsigned char* idx, int* out, int n)
//   launch: as poly_eval
//   out[i] = kSquares[idx[i] & 15] + kConfig.offset * kConfig.sign, where kSquares[k] = k*k
//   - 3 and kConfig = {offset 1000, sign -1, scale 0.5 (unused here), name "cfg"}
// config_scale(const double* x, double* y, int n)
//   launch: as poly_eval
//   y[i] = x[i] * kConfig.scale + kConfig.name[i % 4] (the chars 'c', 'f', 'g', '\0')

__constant__ float kPoly[8] = {
    0.0001984127f, 0.0013888889f, 0.0083333333f, 0.0416666667f,
    0.1666666667f, 0.5f, 1.0f, 1.0f,
};

static __constant__ int kSquares[16] = {
    -3, -2, 1, 6, 13, 22, 33, 46, 61, 78, 97, 118, 141, 166, 193, 222,
};

struct Config {
    int offset;
    short sign;
    double scale;
    char name[4];
};

__constant__ Config kConfig = {1000, -1, 0.5, "cfg"};

extern "C" __global__ void poly_eval(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    float acc = kPoly[0];
#pragma unroll
    for (int k = 1; k < 8; ++k)
        acc = fmaf(acc, v, kPoly[k]);
    y[i] = acc;
}

extern "C" __global__ void lut_lookup(const unsigned char* idx, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = kSquares[idx[i] & 15] + kConfig.offset * kConfig.sign;
}

extern "C" __global__ void config_scale(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] * kConfig.scale + kConfig.name[i % 4];
}
