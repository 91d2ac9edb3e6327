// odd_even_sort.cu: odd-even transposition sort of one tile of floats per block in static
// shared memory; each thread owns one compare-exchange pair per phase, and n phases sort n keys.
//
// odd_even_sort_block(float* data, int n)
//   launch: grid = ((n + 255) / 256,), block = (128,), dynamic shared = 0
//   (block must be 128: each block sorts a tile of 256 floats, two per thread)
//   sorts data[k*256 : min(k*256 + 256, n)] ascending in place for each tile k. Keys must not
//   be NaN; -0.0 and +0.0 compare equal and may come out in either order.

#define TILE 256

extern "C" __global__ void odd_even_sort_block(float* data, int n)
{
    __shared__ float s[TILE];
    int base = blockIdx.x * TILE;
    int count = min(TILE, n - base);
    for (int j = threadIdx.x; j < TILE; j += blockDim.x)
        s[j] = j < count ? data[base + j] : __int_as_float(0x7f800000);  // +inf pads the tail
    __syncthreads();
    for (int phase = 0; phase < TILE; ++phase) {
        int j = 2 * threadIdx.x + (phase & 1);
        if (j + 1 < TILE) {
            float a = s[j], b = s[j + 1];
            if (a > b) {
                s[j] = b;
                s[j + 1] = a;
            }
        }
        __syncthreads();
    }
    for (int j = threadIdx.x; j < count; j += blockDim.x)
        data[base + j] = s[j];
}
