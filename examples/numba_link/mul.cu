// A device function for numba's cuda.declare_device("mul_f32", "float32(float32, float32)"):
// numba's calling convention passes the result's address first and expects a status
// (0: success) back.
#include "mul_scale.h"

extern "C" __device__ int mul_f32(float* result, float a, float b) {
    *result = a * b * MUL_SCALE;
    return 0;
}
