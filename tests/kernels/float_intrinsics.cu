// float_intrinsics.cu: single-precision math: fast hardware approximations (__expf, __sinf,
// __cosf, __logf, __fdividef, rsqrtf, ...), explicitly rounded operations (__fadd_rn,
// __fmul_rz, __fmaf_ru, __fdiv_rd, __fsqrt_rn, __frcp_rz, ...), saturation, and float <-> int
// conversions with every rounding mode.
//
// float_fast_math(const float* x, const float* y, float* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   out[k*n + i]: k=0 __expf(x) k=1 __sinf(x) k=2 __cosf(x) k=3 __logf(|x|) k=4 __fdividef(x, y)
//   k=5 rsqrtf(|x|) k=6 __saturatef(x) (clamp to [0, 1], NaN -> 0) k=7 __powf(|x|, y)
//   (approximations: __expf/__powf to ~2 + 1.16*|x| ulps (ex2.approx), __sinf/__cosf with
//   absolute error ~2**-21.4 on [-pi, pi], __logf/__fdividef/rsqrtf ~2 ulps; compare loosely)
// float_rounding(const float* x, const float* y, float* out, int n)
//   launch: as float_fast_math; every result exact IEEE binary32 with the named rounding:
//   out[k*n + i]: k=0 __fadd_rn k=1 __fadd_rz k=2 __fadd_ru k=3 __fadd_rd  (x + y)
//   k=4 __fmul_rn k=5 __fmul_rz k=6 __fmul_ru k=7 __fmul_rd  (x * y)
//   k=8 __fmaf_rn(x, y, 1) k=9 __fmaf_rz(x, y, -1) k=10 __fdiv_rn(x, y) k=11 __fdiv_rd(x, y)
//   k=12 __fsqrt_rn(|x|) k=13 __fsqrt_ru(|x|) k=14 __frcp_rn(x) k=15 __frcp_rz(x)
// float_to_int(const float* x, int* out, unsigned* uout, long long* lout, int n)
//   launch: as float_fast_math
//   out[k*n + i]: k=0 __float2int_rn k=1 __float2int_rz k=2 __float2int_ru k=3 __float2int_rd;
//   uout[i] = __float2uint_rn(x); lout[i] = __float2ll_rz(x); all saturate out-of-range
//   values to the type's limits. NaN gives 0 for the 32-bit results but INT64_MIN
//   (0x8000000000000000) for lout: PTX cvt's rule (ISA 9.0) is 0 unless the source is .f64 or
//   the destination is 64-bit, then 1 << (width - 1); the H100 agrees
// float_misc(const float* x, const float* y, float* out, int n)
//   launch: as float_fast_math
//   out[k*n + i]: k=0 fminf(x, y) k=1 fmaxf(x, y) k=2 copysignf(x, y) k=3 truncf(x)
//   k=4 rintf(x) (ties to even) k=5 roundf(x) (ties away from zero) k=6 floorf(x) k=7 ceilf(x)
//   k=8 fabsf(x) k=9 nextafterf(x, y) k=10 fdimf(x, y) k=11 ldexpf(x, (int)y) with y in
//   [-200, 200]; k=12 x / y as IEEE division (div.rn.f32) k=13 sqrtf(|x|) (sqrt.rn.f32)

extern "C" __global__ void float_fast_math(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float a = x[i], b = y[i];
    out[0 * n + i] = __expf(a);
    out[1 * n + i] = __sinf(a);
    out[2 * n + i] = __cosf(a);
    out[3 * n + i] = __logf(fabsf(a));
    out[4 * n + i] = __fdividef(a, b);
    out[5 * n + i] = rsqrtf(fabsf(a));
    out[6 * n + i] = __saturatef(a);
    out[7 * n + i] = __powf(fabsf(a), b);
}

extern "C" __global__ void float_rounding(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float a = x[i], b = y[i];
    out[0 * n + i] = __fadd_rn(a, b);
    out[1 * n + i] = __fadd_rz(a, b);
    out[2 * n + i] = __fadd_ru(a, b);
    out[3 * n + i] = __fadd_rd(a, b);
    out[4 * n + i] = __fmul_rn(a, b);
    out[5 * n + i] = __fmul_rz(a, b);
    out[6 * n + i] = __fmul_ru(a, b);
    out[7 * n + i] = __fmul_rd(a, b);
    out[8 * n + i] = __fmaf_rn(a, b, 1.0f);
    out[9 * n + i] = __fmaf_rz(a, b, -1.0f);
    out[10 * n + i] = __fdiv_rn(a, b);
    out[11 * n + i] = __fdiv_rd(a, b);
    out[12 * n + i] = __fsqrt_rn(fabsf(a));
    out[13 * n + i] = __fsqrt_ru(fabsf(a));
    out[14 * n + i] = __frcp_rn(a);
    out[15 * n + i] = __frcp_rz(a);
}

extern "C" __global__ void float_to_int(const float* x, int* out, unsigned* uout, long long* lout,
                                        int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float a = x[i];
    out[0 * n + i] = __float2int_rn(a);
    out[1 * n + i] = __float2int_rz(a);
    out[2 * n + i] = __float2int_ru(a);
    out[3 * n + i] = __float2int_rd(a);
    uout[i] = __float2uint_rn(a);
    lout[i] = __float2ll_rz(a);
}

extern "C" __global__ void float_misc(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float a = x[i], b = y[i];
    out[0 * n + i] = fminf(a, b);
    out[1 * n + i] = fmaxf(a, b);
    out[2 * n + i] = copysignf(a, b);
    out[3 * n + i] = truncf(a);
    out[4 * n + i] = rintf(a);
    out[5 * n + i] = roundf(a);
    out[6 * n + i] = floorf(a);
    out[7 * n + i] = ceilf(a);
    out[8 * n + i] = fabsf(a);
    out[9 * n + i] = nextafterf(a, b);
    out[10 * n + i] = fdimf(a, b);
    out[11 * n + i] = ldexpf(a, (int)b);
    out[12 * n + i] = a / b;
    out[13 * n + i] = sqrtf(fabsf(a));
}
