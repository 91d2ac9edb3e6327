// convolution.cu: convolutions as image and signal kernels do them: a 1D filter held in
// constant memory with a shared-memory input tile, and a 2D convolution of a single-channel
// image with a small filter passed in global memory (zero padding at the borders).
//
// conv1d_const(const float* x, float* y, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0 (block must be 256)
//   y[i] = sum_{k=0}^{8} kFilter[k] * x[i + k - 4] (x outside [0, n) is 0), accumulated in k
//   order with fmaf; kFilter is a 9-tap binomial filter / 256: {1, 8, 28, 56, 70, 56, 28, 8, 1}
// conv2d_same(const float* img, const float* filt, float* out, int width, int height, int fw)
//   launch: grid = ((width + 15) / 16, (height + 15) / 16), block = (16, 16),
//           dynamic shared = fw * fw * sizeof(float); fw odd, <= 15
//   out[y][x] = sum_{dy, dx in [0, fw)} filt[dy][dx] * img[y + dy - r][x + dx - r] with
//   r = fw / 2 and zero padding (cross-correlation, as deep-learning "convolution"),
//   accumulated in (dy, dx) row-major order with fmaf; the filter is staged in dynamic shared
//   memory

#define RADIUS 4
#define BLOCK 256

__constant__ float kFilter[2 * RADIUS + 1] = {
    1.0f / 256, 8.0f / 256, 28.0f / 256, 56.0f / 256, 70.0f / 256,
    56.0f / 256, 28.0f / 256, 8.0f / 256, 1.0f / 256,
};

extern "C" __global__ void conv1d_const(const float* x, float* y, int n)
{
    __shared__ float tile[BLOCK + 2 * RADIUS];
    int base = blockIdx.x * BLOCK;
    for (int j = threadIdx.x; j < BLOCK + 2 * RADIUS; j += BLOCK) {
        int src = base + j - RADIUS;
        tile[j] = src >= 0 && src < n ? x[src] : 0.0f;
    }
    __syncthreads();
    int i = base + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * RADIUS; ++k)
        acc = fmaf(kFilter[k], tile[threadIdx.x + k], acc);
    y[i] = acc;
}

extern "C" __global__ void conv2d_same(const float* img, const float* filt, float* out,
                                       int width, int height, int fw)
{
    extern __shared__ float sfilt[];
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    for (int j = t; j < fw * fw; j += blockDim.x * blockDim.y)
        sfilt[j] = filt[j];
    __syncthreads();
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    int r = fw / 2;
    float acc = 0.0f;
    for (int dy = 0; dy < fw; ++dy) {
        int yy = y + dy - r;
        for (int dx = 0; dx < fw; ++dx) {
            int xx = x + dx - r;
            float v = yy >= 0 && yy < height && xx >= 0 && xx < width ? img[yy * width + xx] : 0.0f;
            acc = fmaf(sfilt[dy * fw + dx], v, acc);
        }
    }
    out[y * width + x] = acc;
}
