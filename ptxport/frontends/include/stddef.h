// ptxport: <stddef.h> for NVRTC, which has none: its names and macros from libcu++'s <cuda/std/cstddef>.
#pragma once
#include <cuda/std/cstddef>
