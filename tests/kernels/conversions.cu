// conversions.cu: conversions between every pair of widths and kinds C++ gives (each one PTX
// cvt with its rounding and saturation rules): integer widening with sign or zero extension,
// narrowing by truncation, int <-> float with C's rounding (to nearest for int -> float,
// toward zero for float -> int), double -> float rounding, and the explicitly rounded
// intrinsics for double.
//
// int_conversions(const long long* x, long long* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   out[k*n + i] with v = x[i]: k=0 (signed char)v k=1 (unsigned char)v k=2 (short)v
//   k=3 (unsigned short)v k=4 (int)v k=5 (unsigned)v (all truncations, then widened back
//   to long long by sign or zero extension as their type says)
//   k=6 (long long)(float)v (int64 -> float rounds to nearest even; give |v| < 2**62 so the
//   float converts back without overflow)
//   k=7 __double_as_longlong((double)(unsigned long long)v) (u64 -> double, nearest even)
//   k=8 __double_as_longlong((double)v) (s64 -> double, nearest even)
// float_conversions(const double* x, float* f, int* i32, unsigned* u32, double* d, int n)
//   launch: as int_conversions; give |x| < 2**31 so that the C conversions to int and
//   unsigned are defined (the intrinsic __double2int_rn would saturate anyway)
//   f[4i + 0..3] = (float)x (round to nearest even), __double2float_rz(x),
//   __double2float_ru(x), __double2float_rd(x);
//   i32[2i] = (int)x (toward zero), i32[2i+1] = __double2int_rn(x) (ties to even,
//   saturating); u32[i] = (unsigned)fabs(x) (toward zero);
//   d[2i] = (double)(float)x; d[2i+1] = (double)__int2float_rn((int)x)

extern "C" __global__ void int_conversions(const long long* x, long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long v = x[i];
    out[0 * n + i] = (signed char)v;
    out[1 * n + i] = (unsigned char)v;
    out[2 * n + i] = (short)v;
    out[3 * n + i] = (unsigned short)v;
    out[4 * n + i] = (int)v;
    out[5 * n + i] = (unsigned)v;
    out[6 * n + i] = (long long)(float)v;
    out[7 * n + i] = __double_as_longlong((double)(unsigned long long)v);
    out[8 * n + i] = __double_as_longlong((double)v);
}

extern "C" __global__ void float_conversions(const double* x, float* f, int* i32, unsigned* u32,
                                             double* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double v = x[i];
    f[4 * i + 0] = (float)v;
    f[4 * i + 1] = __double2float_rz(v);
    f[4 * i + 2] = __double2float_ru(v);
    f[4 * i + 3] = __double2float_rd(v);
    i32[2 * i] = (int)v;
    i32[2 * i + 1] = __double2int_rn(v);
    u32[i] = (unsigned)fabs(v);
    d[2 * i] = (double)(float)v;
    d[2 * i + 1] = (double)__int2float_rn((int)v);
}
