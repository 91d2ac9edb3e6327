// device_functions.cu: calls that stay calls in PTX (.func with .param arguments and return
// values): __noinline__ device functions, including recursive ones (factorial and a
// doubly recursive Fibonacci), a function returning a struct, and a template kernel
// instantiated explicitly (a mangled .entry) that calls a mangled template .func.
//
// recursive_factorial(const int* n_in, unsigned long long* out, int n)
//   launch: grid = ((n + 63) / 64,), block = (64,), dynamic shared = 0
//   out[i] = n_in[i]! mod 2**64 by a recursive __noinline__ function (0! = 1; n_in[i] in
//   0..25 keeps the recursion short)
// recursive_fib(const int* n_in, int* out, int n)
//   launch: as recursive_factorial
//   out[i] = fib(n_in[i]) with fib(0) = 0, fib(1) = 1, by doubly recursive calls
//   (n_in[i] in 0..20)
// noinline_calls(const float* x, float* out, int n)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0
//   with (lo, hi) = minmax_pair(x[i], 2*x[i] - 1), a __noinline__ function returning a struct
//   (lo = fminf, hi = fmaxf): out[i] = clamp_to_unit(lo) + hi * 0.5f, where
//   clamp_to_unit(v) = fminf(fmaxf(v, 0), 1) is another __noinline__ function
// scale_by_power<int, 3>, mangled _Z14scale_by_powerIiLi3EEvPKT_PS0_i
//   (const int* x, int* y, int n) launch: as noinline_calls; y[i] = x[i]**3 (wrap-around)
//   via the __noinline__ template ipow<int>
// scale_by_power<double, 2>, mangled _Z14scale_by_powerIdLi2EEvPKT_PS0_i
//   (const double* x, double* y, int n) launch: as noinline_calls; y[i] = x[i] * x[i]
//   (the multiplication ((1 * x) * x) in that order)

struct MinMax {
    float lo, hi;
};

__device__ __noinline__ unsigned long long factorial(int k)
{
    return k <= 1 ? 1ull : (unsigned long long)k * factorial(k - 1);
}

__device__ __noinline__ int fib(int k)
{
    return k < 2 ? k : fib(k - 1) + fib(k - 2);
}

__device__ __noinline__ MinMax minmax_pair(float a, float b)
{
    MinMax r;
    r.lo = fminf(a, b);
    r.hi = fmaxf(a, b);
    return r;
}

__device__ __noinline__ float clamp_to_unit(float v)
{
    return fminf(fmaxf(v, 0.0f), 1.0f);
}

template <typename T>
__device__ __noinline__ T ipow(T base, int exponent)
{
    T r = T(1);
    for (int e = 0; e < exponent; ++e)
        r = r * base;
    return r;
}

extern "C" __global__ void recursive_factorial(const int* n_in, unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = factorial(n_in[i]);
}

extern "C" __global__ void recursive_fib(const int* n_in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fib(n_in[i]);
}

extern "C" __global__ void noinline_calls(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    MinMax m = minmax_pair(x[i], 2.0f * x[i] - 1.0f);
    out[i] = clamp_to_unit(m.lo) + m.hi * 0.5f;
}

template <typename T, int P>
__global__ void scale_by_power(const T* x, T* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = ipow<T>(x[i], P);
}

template __global__ void scale_by_power<int, 3>(const int*, int*, int);
template __global__ void scale_by_power<double, 2>(const double*, double*, int);
