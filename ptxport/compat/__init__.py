"""The compatibility layer: unmodified CUDA programs on ptxport's devices.

A drop-in libcuda.so.1 (native/shim.c, built by build.py) passes every driver API call to
Python handlers (driver.py, memory.py, streams.py, execution.py, hidden.py), which call
ptxport's runtime; `ptxport run` (cli.py) puts it in front of the program. See
docs/compat.md.
"""
