/* llmc_cuda12.h: CUDA 12's runtime calls that llm.c uses and CUDA 13's headers no longer
 * declare, put back on top of CUDA 13's (nvcc -include this), so that llm.c's sources build
 * unchanged with the nvidia-cuda-nvcc 13 wheel. Used by benchmarks/llmc.py.
 *
 * cudaMemAdvise(ptr, bytes, advice, int device): CUDA 13 takes a cudaMemLocation instead
 * (what CUDA 12 called cudaMemAdvise_v2); cudaCpuDeviceId names host memory. */
#pragma once
#include <cuda_runtime.h>

#if defined(__cplusplus) && CUDART_VERSION >= 13000
static inline cudaError_t cudaMemAdvise(const void *ptr, size_t bytes, cudaMemoryAdvise advice,
                                        int device)
{
    cudaMemLocation where;
    where.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    where.id = device == cudaCpuDeviceId ? 0 : device;
    return cudaMemAdvise(ptr, bytes, advice, where);
}
#endif
