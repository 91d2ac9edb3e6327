// int_intrinsics.cu: CUDA's integer intrinsics on 32- and 64-bit operands; every result is
// exact and defined for all inputs (shift counts are masked or clamped as the intrinsic says).
//
// int_bits_u32(const unsigned* x, const unsigned* y, unsigned* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   out[k*n + i], with a = x[i], b = y[i], s = b & 63:
//   k=0 __popc(a)  k=1 __clz(a) (32 for 0)  k=2 __brev(a)  k=3 __ffs(a) (1-based, 0 for 0)
//   k=4 __byte_perm(a, b, b >> 16): byte j of the result is byte (nibble j of the selector
//       & 7) of the 8 bytes b:a (a is bytes 0-3); CUDA masks the selector with 0x7777, so
//       prmt's sign-replicating mode never occurs
//   k=5 __funnelshift_l(a, b, s) = high 32 bits of ((b:a) << (s & 31))
//   k=6 __funnelshift_r(a, b, s) = low 32 bits of ((b:a) >> (s & 31))
//   k=7 __funnelshift_lc(a, b, s) = as k=5 with the shift clamped to 32 instead of masked
//   k=8 __funnelshift_rc(a, b, s) = as k=6 with the shift clamped to 32
//   k=9 __umulhi(a, b) = (a * b) >> 32 as 64-bit unsigned
//   k=10 __mulhi((int)a, (int)b) = ((long long)a * b) >> 32, signed
//   k=11 __sad((int)a, (int)b, 7) = |a - b| + 7 (signed difference, unsigned result)
//   k=12 __usad(a, b, 7) = |a - b| + 7 (unsigned difference)
//   k=13 __dp4a((int)a, (int)b, 100) = sum of the products of the 4 signed bytes + 100
//   k=14 __dp4a(a, b, 100u) = the same with unsigned bytes
//   k=15 __dp2a_lo((int)a, (int)b, 0) = a's two signed 16-bit halves times b's low two
//        signed bytes, summed
// int_bits_u64(const unsigned long long* x, const unsigned long long* y,
//              unsigned long long* out, int n)
//   launch: as int_bits_u32
//   out[k*n + i]: k=0 __popcll(a) k=1 __clzll(a) k=2 __brevll(a) k=3 __ffsll((long long)a)
//   k=4 __umul64hi(a, b) = high 64 bits of the 128-bit unsigned product
//   k=5 __mul64hi((long long)a, (long long)b), signed
//   k=6 a >> (b & 63) k=7 (long long)a >> (b & 63) (arithmetic) k=8 a << (b & 63)
// int_bitfield(const unsigned* x, unsigned* out, int n)
//   launch: as int_bits_u32
//   out[i] = (x >> 5) & 0x3ff (a bit-field extract); out[n + i] = x with bits 8..15 replaced by
//   its top byte, (x & ~0xff00) | ((x >> 24) << 8) (a bit-field insert); out[2n + i] = the
//   low 16 bits of x sign-extended to 32 bits, as unsigned

extern "C" __global__ void int_bits_u32(const unsigned* x, const unsigned* y, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned a = x[i], b = y[i], s = b & 63;
    out[0 * n + i] = __popc(a);
    out[1 * n + i] = __clz(a);
    out[2 * n + i] = __brev(a);
    out[3 * n + i] = __ffs(a);
    out[4 * n + i] = __byte_perm(a, b, b >> 16);
    out[5 * n + i] = __funnelshift_l(a, b, s);
    out[6 * n + i] = __funnelshift_r(a, b, s);
    out[7 * n + i] = __funnelshift_lc(a, b, s);
    out[8 * n + i] = __funnelshift_rc(a, b, s);
    out[9 * n + i] = __umulhi(a, b);
    out[10 * n + i] = __mulhi((int)a, (int)b);
    out[11 * n + i] = __sad((int)a, (int)b, 7u);
    out[12 * n + i] = __usad(a, b, 7u);
    out[13 * n + i] = __dp4a((int)a, (int)b, 100);
    out[14 * n + i] = __dp4a(a, b, 100u);
    out[15 * n + i] = __dp2a_lo((int)a, (int)b, 0);
}

extern "C" __global__ void int_bits_u64(const unsigned long long* x, const unsigned long long* y,
                                        unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long a = x[i], b = y[i];
    out[0 * n + i] = __popcll(a);
    out[1 * n + i] = __clzll(a);
    out[2 * n + i] = __brevll(a);
    out[3 * n + i] = __ffsll((long long)a);
    out[4 * n + i] = __umul64hi(a, b);
    out[5 * n + i] = __mul64hi((long long)a, (long long)b);
    out[6 * n + i] = a >> (b & 63);
    out[7 * n + i] = (unsigned long long)((long long)a >> (b & 63));
    out[8 * n + i] = a << (b & 63);
}

extern "C" __global__ void int_bitfield(const unsigned* x, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned v = x[i];
    out[i] = (v >> 5) & 0x3ffu;
    out[n + i] = (v & ~0xff00u) | ((v >> 24) << 8);
    out[2 * n + i] = (unsigned)(int)(short)(v & 0xffffu);
}
