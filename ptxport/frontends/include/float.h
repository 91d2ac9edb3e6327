// ptxport: <float.h> for NVRTC, which has none: its names and macros from libcu++'s <cuda/std/cfloat>.
#pragma once
#include <cuda/std/cfloat>
