"""ptxport: read PTX and run CUDA kernels on any processor.

The front end (ptxport.ptx), the IR (ptxport.ir) and `ptxport inspect` exist today; the
runtime API shaped like NVIDIA's cuda.core (Device, Program, launch, ...) comes with the CPU
target.
"""

from ptxport import errors

__version__ = "0.1.0"

__all__ = ["__version__", "errors"]
