// The table that rdc_main.cu's kernel reads, and the kernel that fills it (see rdc_shared.h).
#include "rdc_shared.h"

__device__ int g_table[TABLE_SIZE];

__global__ void fill_table(int *table) {
  int i = threadIdx.x;
  table[i] = i * i - 7 * i;
}
