// int64_arith.cu: 64-bit integer arithmetic: signed and unsigned division and remainder (long
// software sequences in PTX), multiplication with wrap-around, mixed 32/64-bit widening, and a
// 64-bit linear congruential generator advanced by repeated squaring (a loop of 64-bit mul).
//
// int64_ops(const long long* x, const long long* y, long long* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   y[i] != 0 and not (x[i] == INT64_MIN and y[i] == -1); out[k*n + i]:
//   k=0 x / y (truncating) k=1 x % y (sign of x) k=2 (unsigned)x / (unsigned)y
//   k=3 (unsigned)x % (unsigned)y k=4 x * y mod 2**64 k=5 x + y mod 2**64 k=6 x - y mod 2**64
//   k=7 (long long)(int)x * (int)y (the 32x32->64 widening multiply of the low halves)
//   k=8 min(x, y) k=9 max((unsigned)x, (unsigned)y) k=10 |x| (llabs; INT64_MIN stays)
//   k=11 x < y ? -1 : (x > y ? 1 : 0)
// lcg_skip(const unsigned long long* seeds, const unsigned long long* steps,
//          unsigned long long* out, int n)
//   launch: as int64_ops
//   out[i] = the state of the LCG s -> 6364136223846793005 * s + 1442695040888963407
//   (mod 2**64) after steps[i] steps from seeds[i], computed in O(log steps) by composing the
//   affine map with itself (as in PCG's advance)

extern "C" __global__ void int64_ops(const long long* x, const long long* y, long long* out,
                                     int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long a = x[i], b = y[i];
    unsigned long long ua = (unsigned long long)a, ub = (unsigned long long)b;
    out[0 * n + i] = a / b;
    out[1 * n + i] = a % b;
    out[2 * n + i] = (long long)(ua / ub);
    out[3 * n + i] = (long long)(ua % ub);
    out[4 * n + i] = (long long)(ua * ub);
    out[5 * n + i] = (long long)(ua + ub);
    out[6 * n + i] = (long long)(ua - ub);
    out[7 * n + i] = (long long)(int)a * (int)b;
    out[8 * n + i] = min(a, b);
    out[9 * n + i] = (long long)max(ua, ub);
    out[10 * n + i] = a < 0 ? (long long)(0ull - ua) : a;
    out[11 * n + i] = a < b ? -1 : (a > b ? 1 : 0);
}

extern "C" __global__ void lcg_skip(const unsigned long long* seeds,
                                    const unsigned long long* steps, unsigned long long* out,
                                    int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long mult = 6364136223846793005ull, inc = 1442695040888963407ull;
    unsigned long long acc_mult = 1, acc_inc = 0;
    for (unsigned long long delta = steps[i]; delta > 0; delta >>= 1) {
        if (delta & 1) {
            acc_mult *= mult;
            acc_inc = acc_inc * mult + inc;
        }
        inc = (mult + 1) * inc;
        mult *= mult;
    }
    out[i] = acc_mult * seeds[i] + acc_inc;
}
