// ptxport: <assert.h> for NVRTC, which has none. NVRTC defines assert() itself (CUDA's
// crt/common_functions.h, calling __assertfail); this header only lets the include succeed.
#pragma once
