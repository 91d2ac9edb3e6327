"""Purpose-built kernels for the device group tests: one per way writes merge or refuse."""

from __future__ import annotations

from functools import cache

SOURCE = r"""
extern "C" __global__ void disjoint(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f + 1.0f;
}
extern "C" __global__ void strided(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[3 * i + 1] = i;
}
extern "C" __global__ void rows_2d(float *out, int width) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    out[blockIdx.y * width + x] = blockIdx.y * 1000.0f + x;
}
extern "C" __global__ void same_value(int *out, const int *slot, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[slot[i]] = 7;
}
extern "C" __global__ void conflicting(int *out) {
    out[threadIdx.x] = blockIdx.x;
}
extern "C" __global__ void grid_stride(int *out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = i * 3 + gridDim.x;
}
extern "C" __global__ void grid_shape(int *out) {
    int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) out[b] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
}
__device__ __noinline__ unsigned my_block() { return blockIdx.x; }
extern "C" __global__ void via_function(unsigned *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = my_block();
}
extern "C" __global__ void atomics(unsigned *sum, int *low, int *high, unsigned *ors,
                                   unsigned *xors, float *fsum, const int *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    atomicAdd(&sum[i & 3], (unsigned)v);
    atomicMin(low, v);
    atomicMax(high, v);
    atomicOr(ors, 1u << (v & 31));
    atomicXor(xors, (unsigned)v);
    atomicAdd(fsum, (float)(v & 15));
}
extern "C" __global__ void slots(int *out, unsigned *counter) {
    unsigned s = atomicAdd(counter, 1u);
    out[s] = blockIdx.x;
}
extern "C" __global__ void cas_max(int *best, const int *in) {
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    int old = *best;
    while (old < v) { int seen = atomicCAS(best, old, v); if (seen == old) break; old = seen; }
}
extern "C" __global__ void fenced(int *out, int *flag) {
    out[blockIdx.x] = 1;
    __threadfence();
    if (threadIdx.x == 0) atomicAdd(flag, 1);
}
__device__ int device_counter;
extern "C" __global__ void module_variable(int *out) {
    out[blockIdx.x] = device_counter;
}
struct Pointers { const float *in; float *out; int n; };
extern "C" __global__ void via_struct(Pointers p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = p.in[i] + 1.0f;
}
extern "C" __global__ void via_table(float *const *rows, int width) {
    rows[blockIdx.x][threadIdx.x % width] = blockIdx.x;
}
extern "C" __global__ void via_stack(float *a, float *b, int pick) {
    float *both[2] = {a, b};
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    both[(i + pick) & 1][i] = i;
}
extern "C" __global__ void via_malloc(int *out) {
    int *box = (int *)malloc(sizeof(int));
    *box = threadIdx.x;
    out[blockIdx.x * blockDim.x + threadIdx.x] = *box;
    free(box);
}
extern "C" __global__ void gather_wide(float *out, const float *in, const long long *index) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[index[i]] = in[i];
}
extern "C" __global__ void blur(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    if (i > 0) v += in[i - 1];
    if (i + 1 < n) v += in[i + 1];
    out[i] = v;
}
"""


@cache
def group_code():
    """The ObjectCode of SOURCE (NVRTC's PTX is cached on disk)."""
    from ptxport import Program

    return Program(SOURCE, "c++").compile()
