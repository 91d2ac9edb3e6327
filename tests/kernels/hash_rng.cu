// hash_rng.cu: integer hashing and counter-based random numbers, as simulations and
// randomized algorithms use them: MurmurHash3's 32-bit finalizer, xorshift64*, and
// Philox-4x32-10 (Salmon et al. 2011) with 32x32->64 multiplies (mul.hi/mul.lo), converted
// to floats in [0, 1).
//
// murmur_fmix32(const unsigned* x, unsigned* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   out[i] = fmix32(x[i]): h ^= h >> 16; h *= 0x85ebca6b; h ^= h >> 13; h *= 0xc2b2ae35;
//   h ^= h >> 16 (mod 2**32)
// xorshift64star(unsigned long long* state, unsigned long long* out, int n, int steps)
//   launch: as murmur_fmix32
//   for each i < n, `steps` times: s ^= s >> 12; s ^= s << 25; s ^= s >> 27; the last output
//   out[i] = s * 0x2545F4914F6CDD1D (mod 2**64); state[i] = s afterwards
// philox4x32_uniform(unsigned long long seed, float* out, int n)
//   launch: grid = ((n / 4 + 127) / 128,), block = (128,), dynamic shared = 0; n a multiple
//   of 4
//   thread i < n/4: counter = (i, 0, 0, 0), key = (seed low, seed high); 10 Philox rounds
//   (multipliers 0xD2511F53, 0xCD9E8D57; key increments 0x9E3779B9, 0xBB67AE85);
//   out[4i + k] = (word k >> 8) * 2**-24 for k = 0..3 (exact in float)

__device__ __forceinline__ unsigned fmix32(unsigned h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

extern "C" __global__ void murmur_fmix32(const unsigned* x, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fmix32(x[i]);
}

extern "C" __global__ void xorshift64star(unsigned long long* state, unsigned long long* out,
                                          int n, int steps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long s = state[i];
    unsigned long long r = 0;
    for (int k = 0; k < steps; ++k) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        r = s * 0x2545F4914F6CDD1Dull;
    }
    state[i] = s;
    out[i] = r;
}

extern "C" __global__ void philox4x32_uniform(unsigned long long seed, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n / 4)
        return;
    unsigned c0 = (unsigned)i, c1 = 0, c2 = 0, c3 = 0;
    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        unsigned n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    const float scale = 1.0f / 16777216.0f;
    out[4 * i + 0] = (c0 >> 8) * scale;
    out[4 * i + 1] = (c1 >> 8) * scale;
    out[4 * i + 2] = (c2 >> 8) * scale;
    out[4 * i + 3] = (c3 >> 8) * scale;
}
