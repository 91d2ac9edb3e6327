// ptxport: <stdint.h> for NVRTC, which has none: its names and macros from libcu++'s <cuda/std/cstdint>.
#pragma once
#include <cuda/std/cstdint>
