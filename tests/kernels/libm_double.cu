// libm_double.cu: double-precision CUDA math library calls (inlined from libdevice into PTX
// as long instruction sequences). CUDA documents their error bounds in ulps (exp, log, sin,
// cos, pow: 1-2 ulps; sqrt and fma: correctly rounded; erf 2 ulps; lgamma 4 ulps outside its
// zeros): compare with numpy/scipy within a few ulps, exactly for sqrt and fma.
//
// math_f64_unary(const double* x, double* out, int n)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0
//   out is 8 arrays of n, out[k*n + i]: k=0 exp(x) k=1 log(|x|) k=2 sin(x) k=3 cos(x)
//   k=4 sqrt(|x|) k=5 erf(x) k=6 lgamma(x) k=7 cbrt(x)
// math_f64_binary(const double* x, const double* y, const double* z, double* out, int n)
//   launch: as math_f64_unary
//   out[k*n + i]: k=0 pow(|x|, y) k=1 fma(x, y, z) (one rounding) k=2 atan2(y, x)
//   k=3 hypot(x, y) k=4 fmod(x, y) k=5 remainder(x, y) k=6 fmin(x, y) k=7 copysign(x, y)
// math_f64_outputs(const double* x, double* s, double* c, int* e, double* frac, double* ipart,
//                  int n)
//   launch: as math_f64_unary
//   sincos(x, &s[i], &c[i]) (as sin and cos above); frac[i] = frexp(x, &e[i]) (mantissa in
//   [0.5, 1), or x itself for 0, inf and NaN, e unspecified for those);
//   frac[n + i] = modf(x, &ipart[i]) (fractional part; the integral part goes through the
//   pointer). frac holds 2n doubles. Exact for frexp and modf.

extern "C" __global__ void math_f64_unary(const double* x, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double v = x[i];
    out[0 * n + i] = exp(v);
    out[1 * n + i] = log(fabs(v));
    out[2 * n + i] = sin(v);
    out[3 * n + i] = cos(v);
    out[4 * n + i] = sqrt(fabs(v));
    out[5 * n + i] = erf(v);
    out[6 * n + i] = lgamma(v);
    out[7 * n + i] = cbrt(v);
}

extern "C" __global__ void math_f64_binary(const double* x, const double* y, const double* z,
                                           double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double a = x[i], b = y[i];
    out[0 * n + i] = pow(fabs(a), b);
    out[1 * n + i] = fma(a, b, z[i]);
    out[2 * n + i] = atan2(b, a);
    out[3 * n + i] = hypot(a, b);
    out[4 * n + i] = fmod(a, b);
    out[5 * n + i] = remainder(a, b);
    out[6 * n + i] = fmin(a, b);
    out[7 * n + i] = copysign(a, b);
}

extern "C" __global__ void math_f64_outputs(const double* x, double* s, double* c, int* e,
                                            double* frac, double* ipart, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double v = x[i];
    sincos(v, &s[i], &c[i]);
    frac[i] = frexp(v, &e[i]);
    frac[n + i] = modf(v, &ipart[i]);
}
