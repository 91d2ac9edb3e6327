"""The CPU backend: kernel images of ptxport.codegen.targets.cpu, loaded and run on the host."""

from ptxport.runtime.backends.cpu.backend import Backend

__all__ = ["Backend"]
