// Declarations shared by rdc_main.cu, rdc_math.cu and rdc_data.cu (built with -rdc=true).
#pragma once

#define TABLE_SIZE 64

extern __device__ int g_table[TABLE_SIZE];  // defined in rdc_data.cu
extern __device__ int g_mix_calls;          // defined in rdc_math.cu

__device__ int mix(int value, int table_entry);  // defined in rdc_math.cu
__global__ void fill_table(int *table);          // defined in rdc_data.cu
void set_mix_salt(int salt);                     // host function of rdc_math.cu

inline int table_reference(int i) { return i * i - 7 * i; }
inline int mix_reference(int value, int entry, int salt) { return (value ^ entry) * 3 + salt; }
