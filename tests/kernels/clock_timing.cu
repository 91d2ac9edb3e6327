// clock_timing.cu: reads of the cycle counters and the nanosecond timer around work, and
// fences of every scope. Times differ run to run, so the kernels store only facts that hold
// on any correct implementation: counters never go backwards, and the work's result.
//
// timed_work(const float* x, float* y, unsigned long long* monotonic, int n, int iterations)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0
//   y[i] = x[i] after `iterations` rounds of v = v * 0.5f + 0.25f (so it converges towards
//   0.5: compute it the same way, in float with fma); monotonic[i] = 1 if clock64() after the
//   work >= clock64() before it and the globaltimer (%globaltimer via asm) did not go back,
//   else 0. The thread also __nanosleep(200)s and issues __threadfence_block(),
//   __threadfence() and __threadfence_system() (no visible effect)
// clock32_delta(unsigned* out)
//   launch: grid = (1,), block = (32,), dynamic shared = 0
//   out[t] = 1 (the difference of two reads of the 32-bit %clock register across a
//   __nanosleep(1000), modulo 2**32, is below 2**31: a sanity check that it counts up)

extern "C" __global__ void timed_work(const float* x, float* y, unsigned long long* monotonic,
                                      int n, int iterations)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long c0 = clock64();
    unsigned long long g0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    float v = x[i];
    for (int k = 0; k < iterations; ++k)
        v = v * 0.5f + 0.25f;
    __nanosleep(200);
    __threadfence_block();
    __threadfence();
    __threadfence_system();
    long long c1 = clock64();
    unsigned long long g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    y[i] = v;
    monotonic[i] = c1 >= c0 && g1 >= g0;
}

extern "C" __global__ void clock32_delta(unsigned* out)
{
    unsigned c0, c1;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(c0));  // clock() itself reads %clock64 now
    __nanosleep(1000);
    asm volatile("mov.u32 %0, %%clock;" : "=r"(c1));
    out[threadIdx.x] = (c1 - c0) < 0x80000000u;
}
