// printf_kernel.cu: device-side printf (vprintf with a packed argument buffer in .local),
// with every argument kind: int, unsigned, long long, double (floats are promoted), char,
// a string and a pointer-sized value.
//
// printf_values(const float* x, int n)
//   launch: grid = (2,), block = (4,), dynamic shared = 0
//   each thread with i = blockIdx.x * 4 + threadIdx.x < n prints one line
//   "block %d thread %d: x=%.3f i64=%lld u=%u c=%c s=%s\n" with x = x[i], i64 = i * 10**10,
//   u = 0xffffffff - i, c = 'a' + i, s = "ok"; the order of lines between threads is
//   unspecified (compare sorted lines)
// printf_once(int value, double d)
//   launch: grid = (1,), block = (32,), dynamic shared = 0
//   thread 0 only prints "value=%d hex=%#x d=%g\n" once

extern "C" __global__ void printf_values(const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    printf("block %d thread %d: x=%.3f i64=%lld u=%u c=%c s=%s\n", blockIdx.x, threadIdx.x, x[i],
           (long long)i * 10000000000ll, 0xffffffffu - i, 'a' + i, "ok");
}

extern "C" __global__ void printf_once(int value, double d)
{
    if (threadIdx.x == 0)
        printf("value=%d hex=%#x d=%g\n", value, value, d);
}
