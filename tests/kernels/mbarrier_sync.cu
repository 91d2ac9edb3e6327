// mbarrier_sync.cu: the mbarrier instructions (PTX ISA 9.7.13.15) through inline PTX, as
// cuda::barrier and cuda::pipeline use them: phases, waits on a state and on a parity,
// arrive_drop, and (sm_90) transaction counts with try_wait; sm_80 waits with test_wait.
//
// mbarrier_phases(const int* x, int* y)
//   launch: grid = (g,), block = (b,) with b even, 4 <= b <= 256, dynamic shared = 0
//   thread t of block k, i = k*b + t, left = 3*x[k*b + (t-1) mod b],
//   right = 3*x[k*b + (t+1) mod b]:
//   odd t:  y[i] = left + right  (it leaves with arrive_drop after the third phase's arrival)
//   even t: y[i] = (3*x[i] - 3*x[k*b + (t+2) mod b]) + 7*left  (the odd neighbour's
//           left - right, read after the third phase; the fourth phase counts only the even
//           threads, and on sm_90 also waits for a transaction count thread 0 expects and
//           thread 2 completes)

__device__ __forceinline__ unsigned shared_address(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(count)
                 : "memory");
}

__device__ __forceinline__ unsigned long long mbar_arrive(unsigned long long* bar)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];"
                 : "=l"(state) : "r"(shared_address(bar)) : "memory");
    return state;
}

__device__ __forceinline__ void mbar_arrive_drop(unsigned long long* bar)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];"
                 : "=l"(state) : "r"(shared_address(bar)) : "memory");
}

__device__ __forceinline__ bool mbar_test(unsigned long long* bar, unsigned long long state)
{
    unsigned done;
#if __CUDA_ARCH__ >= 900
    asm volatile("{ .reg .pred p; mbarrier.try_wait.shared.b64 p, [%1], %2; "
                 "selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(shared_address(bar)), "l"(state) : "memory");
#else
    asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; "
                 "selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(shared_address(bar)), "l"(state) : "memory");
#endif
    return done != 0;
}

__device__ __forceinline__ bool mbar_test_parity(unsigned long long* bar, unsigned parity)
{
    unsigned done;
    asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; "
                 "selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory");
    return done != 0;
}

extern "C" __global__ void mbarrier_phases(const int* x, int* y)
{
    __shared__ unsigned long long bar;
    __shared__ int s[256];
    int t = threadIdx.x, b = blockDim.x, base = blockIdx.x * b, i = base + t;
    if (t == 0)
        mbar_init(&bar, b);
    __syncthreads();
    // phase 0: publish, then read the neighbours
    s[t] = 3 * x[i];
    unsigned long long state = mbar_arrive(&bar);
    while (!mbar_test(&bar, state)) {
    }
    int left = s[(t + b - 1) % b], right = s[(t + 1) % b];
    // phase 1 (parity 1): every read is done before s changes
    mbar_arrive(&bar);
    while (!mbar_test_parity(&bar, 1)) {
    }
    s[t] = left - right;
    // phase 2 (parity 0): the odd threads arrive and leave for good
    if (t & 1) {
        mbar_arrive_drop(&bar);
        y[i] = left + right;
        return;
    }
    state = mbar_arrive(&bar);
    while (!mbar_test(&bar, state)) {
    }
    int v = s[t + 1];
    // phase 3 (parity 1): the even threads only
#if __CUDA_ARCH__ >= 900
    if (t == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 %0, [%1], 64;"
                     : "=l"(state) : "r"(shared_address(&bar)) : "memory");
    } else {
        state = mbar_arrive(&bar);
        if (t == 2)
            asm volatile("mbarrier.complete_tx.shared.b64 [%0], 64;"
                         ::"r"(shared_address(&bar)) : "memory");
    }
#else
    state = mbar_arrive(&bar);
#endif
    while (!mbar_test(&bar, state)) {
    }
    y[i] = v + 7 * left;
}
