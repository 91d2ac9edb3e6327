"""Running a case through ptxport's public API on any device (the launcher contract of
_core's docstring), shared by the corpus tests of every backend and benchmarks/gpu_check.py."""

from __future__ import annotations

import numpy as np

from ._core import KernelCase

__all__ = ["buffers_and_params", "run_on_device"]


def buffers_and_params(device, stream, args) -> tuple[dict, list]:
    """Device buffers holding the case's buffer Args, and the kernel's arguments."""
    buffers = {}
    for i, arg in enumerate(args):
        if arg.kind in ("in", "out", "inout"):
            buffers[i] = device.allocate(max(arg.value.nbytes, 1), stream=stream)
            if arg.value.nbytes:
                buffers[i].copy_from(np.ascontiguousarray(arg.value).view(np.uint8).reshape(-1),
                                     stream=stream)
    params = []
    for i, arg in enumerate(args):
        if not arg.passed:
            continue
        if i in buffers:
            params.append(buffers[i])
        elif arg.kind == "struct":
            value = arg.value.copy()
            for member, index in arg.pointers.items():
                value[member] = buffers[index].handle
            params.append(value)
        else:
            params.append(arg.value)
    return buffers, params


def run_on_device(device, kernel, case: KernelCase, args) -> dict[int, np.ndarray]:
    """Launch `kernel` (a ptxport Kernel) for `case` on `device`; the final contents of the
    case's out and inout buffers."""
    from ptxport import LaunchConfig, launch

    stream = device.create_stream()
    buffers, params = buffers_and_params(device, stream, args)
    launch(stream, LaunchConfig(grid=case.grid, block=case.block, shmem_size=case.shared_bytes),
           kernel, *params)
    results = {}
    for i, buf in buffers.items():
        if args[i].kind in ("out", "inout"):
            host = np.empty_like(args[i].value)
            if host.nbytes:
                buf.copy_to(host.view(np.uint8).reshape(-1), stream=stream)
            results[i] = host
    stream.sync()
    for buf in buffers.values():
        buf.close()
    return results
