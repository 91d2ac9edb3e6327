// ptxport: <limits.h> for NVRTC, which has none: its names and macros from libcu++'s <cuda/std/climits>.
#pragma once
#include <cuda/std/climits>
