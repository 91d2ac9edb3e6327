/* kernels.cl: cpu_kernels.py's kernels (tests/kernels/*.cu) ported to OpenCL C, line for
 * line: the same algorithm, launch shape and arguments (a kernel with dynamic shared memory
 * takes it as a last __local argument). Warp shuffles become sub-group operations of 32 lanes
 * (reduce, scan): the warp-level algorithm the CUDA code spells out lane by lane. This is
 * issue 15's yardstick: Intel's OpenCL CPU runtime on the same algorithms. */

#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define WARP __attribute__((intel_reqd_sub_group_size(32)))

__kernel void saxpy(float a, __global const float* x, __global float* y, int n)
{
    for (int i = get_group_id(0) * get_local_size(0) + get_local_id(0); i < n;
         i += get_local_size(0) * get_num_groups(0))
        y[i] = a * x[i] + y[i];
}

__kernel void vector_add_f32(__global const float* a, __global const float* b,
                             __global float* c, int n)
{
    int i = get_group_id(0) * get_local_size(0) + get_local_id(0);
    if (i < n)
        c[i] = a[i] + b[i];
}

#define BLOCK 256
__kernel void reduce_sum_i32(__global const int* x, __global int* out, int n)
{
    __local int s[BLOCK];
    int t = get_local_id(0);
    int acc = 0;
    for (int i = get_group_id(0) * 2 * BLOCK + t; i < n; i += 2 * BLOCK * get_num_groups(0)) {
        acc += x[i];
        if (i + BLOCK < n)
            acc += x[i + BLOCK];
    }
    s[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        atomic_add(out, s[0]);
}

static void atomic_add_f64(volatile __global double* p, double v)
{
    long old = atom_add((volatile __global long*)p, 0), seen;
    do {
        seen = old;
        old = atom_cmpxchg((volatile __global long*)p, seen,
                           as_long(as_double(seen) + v));
    } while (old != seen);
}

WARP __kernel void reduce_sum_warp_f64(__global const double* x, __global double* out, int n)
{
    __local double warp_sums[32];
    int lane = get_local_id(0) % 32, warp = get_local_id(0) / 32;
    double acc = 0.0;
    for (int i = get_group_id(0) * get_local_size(0) + get_local_id(0); i < n;
         i += get_local_size(0) * get_num_groups(0))
        acc += x[i];
    acc = sub_group_reduce_add(acc);
    if (lane == 0)
        warp_sums[warp] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (warp == 0) {
        int nwarps = get_local_size(0) / 32;
        acc = lane < nwarps ? warp_sums[lane] : 0.0;
        acc = sub_group_reduce_add(acc);
        if (lane == 0)
            atomic_add_f64(out, acc);
    }
}

#define TILE 16
__kernel void sgemm_tiled(int M, int N, int K, float alpha, __global const float* A,
                          __global const float* B, float beta, __global float* C)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int row = get_group_id(1) * TILE + ty;
    int col = get_group_id(0) * TILE + tx;
    float acc = 0;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = row < M && ka < K ? A[row * K + ka] : 0.0f;
        Bs[ty][tx] = kb < K && col < N ? B[kb * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
#undef TILE

#define TILE 32
#define ROWS_PER_PASS 8
__kernel void transpose_shared_padded(__global const float* in, __global float* out, int rows,
                                      int cols)
{
    __local float tile[TILE][TILE + 1];
    int tx = get_local_id(0), ty = get_local_id(1);
    int c = get_group_id(0) * TILE + tx;
    int r0 = get_group_id(1) * TILE + ty;
    for (int j = 0; j < TILE; j += ROWS_PER_PASS)
        if (r0 + j < rows && c < cols)
            tile[ty + j][tx] = in[(r0 + j) * cols + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    int oc = get_group_id(1) * TILE + tx;
    int or0 = get_group_id(0) * TILE + ty;
    for (int j = 0; j < TILE; j += ROWS_PER_PASS)
        if (or0 + j < cols && oc < rows)
            out[(or0 + j) * rows + oc] = tile[tx][ty + j];
}
#undef TILE

WARP __kernel void softmax_rows_warp(__global const float* x, __global float* y, int rows,
                                     int cols)
{
    int row = get_group_id(0) * (get_local_size(0) / 32) + get_local_id(0) / 32;
    int lane = get_local_id(0) % 32;
    if (row >= rows)
        return;
    __global const float* xr = x + (long)row * cols;
    __global float* yr = y + (long)row * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32)
        m = fmax(m, xr[c]);
    m = sub_group_reduce_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += exp(xr[c] - m);
    s = sub_group_reduce_add(s);
    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32)
        yr[c] = exp(xr[c] - m) * inv;
}

__kernel void scan_exclusive_blelloch(__global const int* x, __global int* y,
                                      __global int* block_sums, int n, __local int* temp)
{
    int t = get_local_id(0);
    int m = 2 * get_local_size(0);
    int base = get_group_id(0) * m;
    temp[2 * t] = base + 2 * t < n ? x[base + 2 * t] : 0;
    temp[2 * t + 1] = base + 2 * t + 1 < n ? x[base + 2 * t + 1] : 0;
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset <<= 1;
    }
    if (t == 0) {
        block_sums[get_group_id(0)] = temp[m - 1];
        temp[m - 1] = 0;
    }
    for (int d = 1; d < m; d <<= 1) {
        offset >>= 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            int left = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += left;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (base + 2 * t < n)
        y[base + 2 * t] = temp[2 * t];
    if (base + 2 * t + 1 < n)
        y[base + 2 * t + 1] = temp[2 * t + 1];
}

WARP __kernel void scan_block_inclusive(__global const float* x, __global float* y, int n)
{
    __local float warp_totals[32];
    int i = get_group_id(0) * get_local_size(0) + get_local_id(0);
    int lane = get_local_id(0) & 31, warp = get_local_id(0) >> 5;
    float v = sub_group_scan_inclusive_add(i < n ? x[i] : 0.0f);
    if (lane == 31)
        warp_totals[warp] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (warp == 0) {
        int nwarps = get_local_size(0) >> 5;
        float total = lane < nwarps ? warp_totals[lane] : 0.0f;
        warp_totals[lane] = sub_group_scan_inclusive_add(total) - total;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n)
        y[i] = v + warp_totals[warp];
}

__kernel void histogram_shared(__global const uchar* data, __global uint* hist, int n)
{
    __local uint local_bins[256];
    local_bins[get_local_id(0)] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = get_group_id(0) * get_local_size(0) + get_local_id(0); i < n;
         i += get_local_size(0) * get_num_groups(0))
        atomic_inc(&local_bins[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint count = local_bins[get_local_id(0)];
    if (count)
        atomic_add(&hist[get_local_id(0)], count);
}

#define T 16
__kernel void stencil_2d_5pt(__global const float* in, __global float* out, int width,
                             int height)
{
    __local float tile[T + 2][T + 2];
    int lx = get_local_id(0), ly = get_local_id(1);
    int x = get_group_id(0) * T + lx;
    int y = get_group_id(1) * T + ly;
    int tx = lx + 1, ty = ly + 1;
    bool inside = x < width && y < height;
    tile[ty][tx] = inside ? in[y * width + x] : 0.0f;
    if (lx == 0)
        tile[ty][0] = x > 0 && y < height ? in[y * width + x - 1] : 0.0f;
    if (lx == T - 1)
        tile[ty][T + 1] = x + 1 < width && y < height ? in[y * width + x + 1] : 0.0f;
    if (ly == 0)
        tile[0][tx] = y > 0 && x < width ? in[(y - 1) * width + x] : 0.0f;
    if (ly == T - 1)
        tile[T + 1][tx] = y + 1 < height && x < width ? in[(y + 1) * width + x] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!inside)
        return;
    float v;
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1)
        v = tile[ty][tx];
    else
        v = 0.25f * (((tile[ty - 1][tx] + tile[ty + 1][tx]) + tile[ty][tx - 1]) + tile[ty][tx + 1]);
    out[y * width + x] = v;
}
