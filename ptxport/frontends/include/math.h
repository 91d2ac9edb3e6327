// ptxport: <math.h> for NVRTC, which has none. CUDA's math functions (sqrtf, exp, ...) are
// NVRTC built-ins already; libcu++'s <cuda/std/cmath> adds the macros (INFINITY, NAN, ...).
#pragma once
#include <cuda/std/cmath>
