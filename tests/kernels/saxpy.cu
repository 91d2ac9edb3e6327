// saxpy.cu: the BLAS level-1 update y = a*x + y in float and double, each with a grid-stride
// loop so that any grid covers any n.
//
// saxpy(float a, const float* x, float* y, int n)
//   launch: grid = (min((n + 255) / 256, 1024),), block = (256,), dynamic shared = 0
//   y[i] = a * x[i] + y[i] for 0 <= i < n (NVRTC contracts this into one fma.rn.f32)
// daxpy(double a, const double* x, double* y, long long n)
//   launch: as saxpy
//   y[i] = a * x[i] + y[i] for 0 <= i < n, in double (one fma.rn.f64); the 64-bit n and
//   index exercise 64-bit loop arithmetic

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void daxpy(double a, const double* x, double* y, long long n)
{
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + y[i];
}
