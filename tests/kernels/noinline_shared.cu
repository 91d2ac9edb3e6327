// noinline_shared.cu: a __noinline__ device function with its own __shared__ array and
// barriers, called twice (its shared array is static: both calls use the same one).
//
// rotate_twice_noinline(const int* x, int* y, int s1, int s2)
//   launch: grid = (g,), block = (b,) with b <= 256, dynamic shared = 0
//   rotate_in_block (__noinline__, called twice) writes each thread's value to a
//   function-scope __shared__ array, waits, reads the value `shift` places on (mod b) and
//   waits again; it keeps its arguments in a local array across the barriers.
//   y[k*b + t] = r2 + 3 * r1 where r1 = x[k*b + (t + s1) % b],
//   r2 = r1 of thread (t + s2) % b (the second rotation of the first).

__device__ __noinline__ int rotate_in_block(int v, int shift)
{
    __shared__ int buf[256];
    volatile int keep[2];
    keep[0] = v;
    keep[1] = shift;
    buf[threadIdx.x] = keep[0];
    __syncthreads();
    int r = buf[(threadIdx.x + keep[1]) % blockDim.x];
    __syncthreads();
    return r;
}

extern "C" __global__ void rotate_twice_noinline(const int* x, int* y, int s1, int s2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int r1 = rotate_in_block(x[i], s1);
    int r2 = rotate_in_block(r1, s2);
    y[i] = r2 + 3 * r1;
}
