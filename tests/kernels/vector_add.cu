// vector_add.cu: element-wise c = a + b for float, int and 64-bit unsigned integers; one thread
// per element with a bounds check (no grid-stride loop).
//
// vector_add_f32(const float* a, const float* b, float* c, int n)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0
//   c[i] = a[i] + b[i] for 0 <= i < n
// vector_add_i32(const int* a, const int* b, int* c, int n)
//   launch: as vector_add_f32
//   c[i] = a[i] + b[i] (two's-complement wrap-around on overflow)
// vector_add_u64(const unsigned long long* a, const unsigned long long* b,
//                unsigned long long* c, unsigned long long n)
//   launch: as vector_add_f32
//   c[i] = a[i] + b[i] modulo 2**64

extern "C" __global__ void vector_add_f32(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" __global__ void vector_add_i32(const int* a, const int* b, int* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = (int)((unsigned)a[i] + (unsigned)b[i]);
}

extern "C" __global__ void vector_add_u64(const unsigned long long* a, const unsigned long long* b,
                                          unsigned long long* c, unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
