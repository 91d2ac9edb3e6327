// Dynamic shared memory (extern __shared__, opted in past 48 KiB with cudaFuncSetAttribute)
// and a block reduction with cooperative groups.
#include <cstdio>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;

__global__ void block_sums(const int *x, int *sums) {
    extern __shared__ int tile[];
    cg::thread_block block = cg::this_thread_block();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = x[i];
    block.sync();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int v = cg::reduce(warp, tile[threadIdx.x], cg::plus<int>());
    if (warp.thread_rank() == 0) atomicAdd(&sums[blockIdx.x], v);
}

int main() {
    const int blocks = 4, threads = 256;
    int h[blocks * threads], *x, *sums, out[blocks];
    for (int i = 0; i < blocks * threads; i++) h[i] = i % 10;
    cudaMalloc(&x, sizeof h);
    cudaMalloc(&sums, sizeof out);
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(sums, 0, sizeof out);
    cudaError_t e = cudaFuncSetAttribute(block_sums, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         64 * 1024);
    printf("opt in: %s\n", cudaGetErrorName(e));
    block_sums<<<blocks, threads, 64 * 1024>>>(x, sums);
    e = cudaDeviceSynchronize();
    cudaMemcpy(out, sums, sizeof out, cudaMemcpyDeviceToHost);
    int expected[blocks] = {};
    for (int i = 0; i < blocks * threads; i++) expected[i / threads] += h[i];
    int wrong = 0;
    for (int b = 0; b < blocks; b++) wrong += out[b] != expected[b];
    printf("sync: %s sums %d %d wrong %d\n", cudaGetErrorName(e), out[0], out[3], wrong);
    return wrong != 0;
}
