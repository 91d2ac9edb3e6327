// warp_shuffle.cu: the four warp shuffles, each with the full warp and with a width that splits
// the warp into independent segments, and on 32-bit, 64-bit and float values. One thread per
// element; every warp must be full (n a multiple of 32, block a multiple of 32).
//
// shuffle_all(const int* x, int* out, int n, int src_lane, int delta)
//   launch: grid = (n / 128,), block = (128,), dynamic shared = 0; n a multiple of 128
//   with l = lane, w = warp base index (i - l), 0 <= src_lane < 32, 0 <= delta < 32,
//   out is 8 arrays of n ints, out[k*n + i]:
//   k=0 __shfl_sync(x, src_lane):               x[w + src_lane]
//   k=1 __shfl_up_sync(x, delta):               x[i - delta] if l >= delta else x[i]
//   k=2 __shfl_down_sync(x, delta):             x[i + delta] if l + delta < 32 else x[i]
//   k=3 __shfl_xor_sync(x, delta):              x[w + (l ^ delta)]
//   with width 8 (segments s = 8*(l/8), sl = l % 8):
//   k=4 __shfl_sync(x, src_lane, 8):            x[w + s + src_lane % 8]
//   k=5 __shfl_up_sync(x, delta % 8, 8):        x[i - delta%8] if sl >= delta%8 else x[i]
//   k=6 __shfl_down_sync(x, delta % 8, 8):      x[i + delta%8] if sl + delta%8 < 8 else x[i]
//   k=7 __shfl_xor_sync(x, delta % 8, 8):       x[w + s + (sl ^ delta%8)]
// shuffle_rotate_f64(const double* x, double* y, int n)
//   launch: as shuffle_all
//   y[i] = x[w + (l + 1) % 32] (a rotation through __shfl_sync with a per-lane source; a
//   double is shuffled as two 32-bit halves)
// shuffle_width16_f32(const float* x, float* y, int n)
//   launch: as shuffle_all
//   y[i] = x[w + 16*(l/16) + (15 - l % 16)] + x[w + (l ^ 16)]: a per-lane source lane
//   reversed within 16-lane segments (width 16), plus the value from the other half-warp

extern "C" __global__ void shuffle_all(const int* x, int* out, int n, int src_lane, int delta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned full = 0xffffffffu;
    int v = x[i];
    int d8 = delta % 8;
    out[0 * n + i] = __shfl_sync(full, v, src_lane);
    out[1 * n + i] = __shfl_up_sync(full, v, delta);
    out[2 * n + i] = __shfl_down_sync(full, v, delta);
    out[3 * n + i] = __shfl_xor_sync(full, v, delta);
    out[4 * n + i] = __shfl_sync(full, v, src_lane, 8);
    out[5 * n + i] = __shfl_up_sync(full, v, d8, 8);
    out[6 * n + i] = __shfl_down_sync(full, v, d8, 8);
    out[7 * n + i] = __shfl_xor_sync(full, v, d8, 8);
}

extern "C" __global__ void shuffle_rotate_f64(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    y[i] = __shfl_sync(0xffffffffu, x[i], (lane + 1) % 32);
}

extern "C" __global__ void shuffle_width16_f32(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    float v = x[i];
    float reversed = __shfl_sync(0xffffffffu, v, 15 - lane % 16, 16);
    float other_half = __shfl_xor_sync(0xffffffffu, v, 16);
    y[i] = reversed + other_half;
}
