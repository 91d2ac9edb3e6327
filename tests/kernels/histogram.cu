// histogram.cu: byte-value histograms with integer atomics: privatised per block in shared
// memory then merged into global memory, and directly in global memory. Counts are integers,
// so the result is exact whatever order the atomics run in. The host zeroes hist first.
//
// histogram_shared(const unsigned char* data, unsigned* hist, int n)
//   launch: grid = (g,), block = (256,), dynamic shared = 0 (block must be 256)
//   hist[v] += number of i < n with data[i] == v, for v in 0..255
// histogram_global(const unsigned char* data, unsigned* hist, int n)
//   launch: grid = (g,), block = (b,), dynamic shared = 0
//   same result, with every increment an atomicAdd on global memory
// histogram_float_bins(const float* x, int* hist, int nbins, float lo, float hi, int n)
//   launch: grid = (g,), block = (b,), dynamic shared = nbins * sizeof(int)
//   hist[k] += number of x in [lo + k*w, lo + (k+1)*w) with w = (hi - lo) / nbins, the bin
//   computed as min((int)((x - lo) * (nbins / (hi - lo))), nbins - 1) in float; values
//   outside [lo, hi) and NaN are dropped. Privatised in dynamic shared memory.

extern "C" __global__ void histogram_shared(const unsigned char* data, unsigned* hist, int n)
{
    __shared__ unsigned local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    unsigned count = local[threadIdx.x];
    if (count)
        atomicAdd(&hist[threadIdx.x], count);
}

extern "C" __global__ void histogram_global(const unsigned char* data, unsigned* hist, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&hist[data[i]], 1u);
}

extern "C" __global__ void histogram_float_bins(const float* x, int* hist, int nbins, float lo,
                                                float hi, int n)
{
    extern __shared__ int bins[];
    for (int k = threadIdx.x; k < nbins; k += blockDim.x)
        bins[k] = 0;
    __syncthreads();
    float scale = nbins / (hi - lo);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float v = x[i];
        if (v >= lo && v < hi) {
            int k = min((int)((v - lo) * scale), nbins - 1);
            atomicAdd(&bins[k], 1);
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < nbins; k += blockDim.x)
        if (bins[k])
            atomicAdd(&hist[k], bins[k]);
}
