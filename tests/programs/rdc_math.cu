// The device function and constant that rdc_main.cu uses (see rdc_shared.h).
#include "common.h"
#include "rdc_shared.h"

__constant__ int c_salt;
__device__ int g_mix_calls = 0;

__device__ int mix(int value, int table_entry) {
  atomicAdd(&g_mix_calls, 1);
  return (value ^ table_entry) * 3 + c_salt;
}

void set_mix_salt(int salt) { CHECK(cudaMemcpyToSymbol(c_salt, &salt, sizeof salt)); }
