// atomic_cas.cu: atomic operations that CUDA lacks, built from atomicCAS loops: a float
// atomicMax (through the bits), a double atomicAdd written as a CAS loop (as before sm_60),
// and a 16-bit atomic add on one half of an aligned 32-bit word.
//
// atomic_max_f32_cas(const float* x, float* out, int n)
//   launch: grid = (g,), block = (b,), dynamic shared = 0
//   *out = max(*out, max over x[0:n]) (host sets *out = -inf); NaNs in x are skipped.
//   Exact: max is order-independent (except which zero wins between -0.0 and +0.0).
// atomic_add_f64_cas(const double* x, double* out, int n)
//   launch: as atomic_max_f32_cas
//   *out += sum of x[0:n] (host zeroes it); give integer-valued x with sums below 2**53 so
//   that the order of additions does not matter
// atomic_add_u16_cas(const unsigned short* x, unsigned short* counters, int n)
//   launch: as atomic_max_f32_cas; counters points at two 16-bit counters in a 4-aligned word
//   counters[i % 2] += x[i] for i < n, modulo 2**16 (two counters sharing one 32-bit word,
//   each updated by CAS on the whole word)

__device__ __forceinline__ float atomic_max_float(float* address, float value)
{
    int* bits = (int*)address;
    int old = *bits;
    while (__int_as_float(old) < value) {
        int assumed = old;
        old = atomicCAS(bits, assumed, __float_as_int(value));
        if (old == assumed)
            break;
    }
    return __int_as_float(old);
}

__device__ __forceinline__ double atomic_add_double(double* address, double value)
{
    unsigned long long* bits = (unsigned long long*)address;
    unsigned long long old = *bits, assumed;
    do {
        assumed = old;
        old = atomicCAS(bits, assumed, __double_as_longlong(__longlong_as_double(assumed) + value));
    } while (assumed != old);
    return __longlong_as_double(old);
}

extern "C" __global__ void atomic_max_f32_cas(const float* x, float* out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        if (!isnan(x[i]))
            atomic_max_float(out, x[i]);
}

extern "C" __global__ void atomic_add_f64_cas(const double* x, double* out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomic_add_double(out, x[i]);
}

extern "C" __global__ void atomic_add_u16_cas(const unsigned short* x, unsigned short* counters,
                                              int n)
{
    unsigned* word = (unsigned*)counters;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        unsigned shift = (i % 2) * 16;
        unsigned old = *word, assumed;
        do {
            assumed = old;
            unsigned half = ((assumed >> shift) + x[i]) & 0xffffu;
            unsigned updated = (assumed & ~(0xffffu << shift)) | (half << shift);
            old = atomicCAS(word, assumed, updated);
        } while (assumed != old);
    }
}
