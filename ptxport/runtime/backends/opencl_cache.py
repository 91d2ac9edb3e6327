"""The opencl backend's on-disk caches (ptxport.cache), so that a program's second run does
not compile its kernels again:

- "spirv": a kernel's SPIR-V module and layout, keyed by its module's PTX text (not its
  name), the kernel's name, whether bounds checks are compiled in, and ptxport's code
  (code_fingerprint: any edit to ptxport makes new keys). Modules built in memory (no PTX
  text) are not stored.
- "opencl-binary": what the OpenCL runtime built of a SPIR-V module for a device
  (CL_PROGRAM_BINARIES), keyed by the SPIR-V and the device, driver and platform versions.
  Intel's CPU runtime takes seconds to a minute per large kernel (llm.c's, the portable
  GEMM) to build SPIR-V; a binary loads in milliseconds. A stored binary the runtime no
  longer takes is built again from the SPIR-V.

Used by opencl.py (compile and _kernel).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict

from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.codegen.targets.cpu.image import code_fingerprint
from ptxport.codegen.targets.spirv import KernelLayout
from ptxport.codegen.targets.spirv_assert import Assertion
from ptxport.ir.nodes import Module

__all__ = ["build_program", "load_spirv", "spirv_key", "store_spirv"]

_FORMAT = "opencl-spirv 1"
_SEPARATOR = b"\0layout\0"


def spirv_key(module: Module, kernel: str, bounds_checks: bool) -> str | None:
    """The SPIR-V cache key of `kernel` of `module`; None for a module without PTX text."""
    if module.source is None:
        return None
    # not the source's name (`ptxport run` names a program's PTX after its file): the SPIR-V
    # does not depend on it, and a program rebuilt with the same PTX finds its kernels
    parts = (_FORMAT, module.source.text, kernel, str(bounds_checks), code_fingerprint())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def load_spirv(key: str | None) -> tuple[bytes, KernelLayout] | None:
    """(SPIR-V, layout) stored under `key`, or None."""
    data = read_entry(cache_path("spirv", key, ".spv")) if key else None
    if data is None or _SEPARATOR not in data:
        return None
    spirv, _, layout = data.rpartition(_SEPARATOR)
    try:
        fields = json.loads(layout)
        fields["pointer_slots"] = tuple(fields["pointer_slots"])
        fields["assertions"] = tuple(Assertion(**a) for a in fields["assertions"])
        return spirv, KernelLayout(**fields)
    except (ValueError, TypeError, KeyError):
        return None


def store_spirv(key: str | None, spirv: bytes, layout: KernelLayout) -> None:
    if key is None:
        return
    fields = json.dumps(asdict(layout), separators=(",", ":")).encode()
    write_entry(cache_path("spirv", key, ".spv"), spirv + _SEPARATOR + fields)


def _binary_path(spirv: bytes, device):
    identity = "\0".join((device.name, device.version, device.driver_version,
                          device.platform.name, device.platform.version))
    key = hashlib.sha256(identity.encode() + b"\0" + spirv).hexdigest()
    return cache_path("opencl-binary", key, ".bin")


def build_program(cl, context, device, spirv: bytes):
    """The built cl.Program of `spirv` for `device`: from the stored binary where there is
    one the runtime takes, else built from the SPIR-V (and its binary stored). Raises
    cl.Error when the runtime refuses the SPIR-V."""
    path = _binary_path(spirv, device)
    with warnings.catch_warnings():  # the build log of a successful build
        warnings.simplefilter("ignore", cl.CompilerWarning)
        binary = read_entry(path)
        if binary:
            try:
                return cl.Program(context, [device], [binary]).build()
            except cl.Error:
                pass    # another runtime's, or a damaged entry: build from the SPIR-V
        program = cl.Program(context, spirv).build()
    try:
        binaries = program.get_info(cl.program_info.BINARIES)
    except cl.Error:
        return program
    if binaries and binaries[0]:
        write_entry(path, bytes(binaries[0]))
    return program
