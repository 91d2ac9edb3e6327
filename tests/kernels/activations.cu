// activations.cu: element-wise neural-network activations over n floats, grid-stride loops.
//
// relu(const float* x, float* y, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   y[i] = max(x[i], 0) (fmaxf: NaN inputs give 0)
// gelu_tanh(const float* x, float* y, int n)
//   launch: as relu
//   y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), with tanhf
// gelu_erf(const float* x, float* y, int n)
//   launch: as relu
//   y[i] = 0.5 x (1 + erf(x / sqrt(2))), with erff
// leaky_relu_f64(const double* x, double* y, double slope, int n)
//   launch: as relu
//   y[i] = x[i] > 0 ? x[i] : slope * x[i]
// sigmoid_fast(const float* x, float* y, int n)
//   launch: as relu
//   y[i] = 1 / (1 + exp(-x[i])) through __expf and __frcp_rn (approximate: compare with a
//   relative tolerance of about 1e-6)

extern "C" __global__ void relu(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = fmaxf(x[i], 0.0f);
}

extern "C" __global__ void gelu_tanh(const float* x, float* y, int n)
{
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}

extern "C" __global__ void gelu_erf(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    }
}

extern "C" __global__ void leaky_relu_f64(const double* x, double* y, double slope, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] > 0.0 ? x[i] : slope * x[i];
}

extern "C" __global__ void sigmoid_fast(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = __frcp_rn(1.0f + __expf(-x[i]));
}
