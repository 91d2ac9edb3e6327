// ptxport: shared by the C++ standard headers of this directory.
//
// NVRTC ships no C++ standard library, so `#include <cstdint>` and friends fail where nvcc
// (which uses the host compiler's) works. Each header here includes libcu++'s <cuda/std/...>
// version (from the nvidia-cuda-cccl wheel) and then this file, which makes the names of
// cuda::std visible as std's: `std::numeric_limits<float>::max()`, `std::uint32_t`,
// `std::is_same_v<...>`. A using-directive is consulted by qualified lookup only for names
// that namespace std does not declare itself, so nothing NVRTC declares in std is replaced.
#pragma once

#ifndef __CUDACC_RTC__
#error "ptxport's standard headers are for NVRTC only: other compilers have their own"
#endif

namespace cuda { namespace std {} }
namespace std { using namespace ::cuda::std; }
