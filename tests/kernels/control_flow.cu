// control_flow.cu: irregular control flow: a dense switch (jump-table shaped), nested loops
// with break and continue, a goto-built loop, short-circuit conditions, and selects, all
// divergent across threads. Integer results, exact.
//
// switch_dispatch(const int* op, const int* a, const int* b, int* out, int n)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0
//   out[i] by op[i]: 0 a+b, 1 a-b, 2 a*b, 3 a&b, 4 a|b, 5 a^b, 6 a<<(b&31), 7 a>>(b&31)
//   (arithmetic), 8 min(a,b), 9 max(a,b), 10 a==b, 11 a/b truncating (0 when b == 0 or for
//   INT_MIN/-1), any other op -1;
//   add/sub/mul wrap modulo 2**32 (computed on unsigned)
// nested_loops(const int* limits, int* out, int n)
//   launch: as switch_dispatch
//   with L = limits[i] (0 <= L <= 64): count pairs (p, q), 0 <= p < L, 0 <= q < L, skipping
//   (continue) pairs with (p + q) % 3 == 0, stopping the inner loop (break) when p * q > 50,
//   and the outer loop entirely once the count exceeds 500; out[i] = count
// goto_collatz(const unsigned* start, int* steps, int n)
//   launch: as switch_dispatch
//   steps[i] = number of Collatz steps from start[i] (>= 1) down to 1, capped at 1000, using
//   goto for the loop; the 3x+1 branch computed in 64 bits (start[i] < 2**31)
// select_chain(const int* x, int* out, int n)
//   launch: as switch_dispatch
//   out[i] = x < -100 ? -3 : x < 0 ? -1 : x == 0 ? 0 : (x > 100 && (x & 1)) ? 3 : 1

extern "C" __global__ void switch_dispatch(const int* op, const int* a, const int* b, int* out,
                                           int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = a[i], y = b[i], r;
    switch (op[i]) {
    case 0: r = (int)((unsigned)x + (unsigned)y); break;
    case 1: r = (int)((unsigned)x - (unsigned)y); break;
    case 2: r = (int)((unsigned)x * (unsigned)y); break;
    case 3: r = x & y; break;
    case 4: r = x | y; break;
    case 5: r = x ^ y; break;
    case 6: r = (int)((unsigned)x << (y & 31)); break;
    case 7: r = x >> (y & 31); break;
    case 8: r = min(x, y); break;
    case 9: r = max(x, y); break;
    case 10: r = x == y; break;
    case 11: r = y != 0 && !(x == (-2147483647 - 1) && y == -1) ? x / y : 0; break;
    default: r = -1; break;
    }
    out[i] = r;
}

extern "C" __global__ void nested_loops(const int* limits, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int L = limits[i];
    int count = 0;
    for (int p = 0; p < L; ++p) {
        for (int q = 0; q < L; ++q) {
            if ((p + q) % 3 == 0)
                continue;
            if (p * q > 50)
                break;
            ++count;
        }
        if (count > 500)
            break;
    }
    out[i] = count;
}

extern "C" __global__ void goto_collatz(const unsigned* start, int* steps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long v = start[i];
    int count = 0;
loop:
    if (v == 1 || count >= 1000)
        goto done;
    v = (v & 1) ? 3 * v + 1 : v >> 1;
    ++count;
    goto loop;
done:
    steps[i] = count;
}

extern "C" __global__ void select_chain(const int* x, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    out[i] = v < -100 ? -3 : v < 0 ? -1 : v == 0 ? 0 : (v > 100 && (v & 1)) ? 3 : 1;
}
