"""The compatibility layer: unmodified CUDA programs on ptxport's devices.

A drop-in libcuda.so.1 (native/shim.c, built by build.py) passes every driver API call to
Python handlers (driver.py, memory.py, streams.py, execution.py, hidden.py), which call
ptxport's runtime; `ptxport run` (cli.py) puts it in front of the program. The same shim
source makes libcublas.so.13 and libcublasLt.so.13 (cublas.py, cublas_gemm.py, cublaslt.py).
See docs/compat.md.
"""
