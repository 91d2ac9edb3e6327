"""Compiles corpus cases' kernels for a device into the disk cache, as the corpus tests of
that device would (tests/test_corpus_cpu.py, tests/test_corpus_opencl.py): on cpu at each
case's block shape, on the warp-gang path and on the scalar one (CpuOptions(gang=False)); on
opencl:0 the SPIR-V and the OpenCL runtime's binary of it. With `amdgpu`, the code objects of
every corpus file for every chip (tests/codegen/test_amdgpu.py's corpus test).
Those files' start_early runs this in a process of its own while the suite's process runs
the tests before them (tests/background.py); their tests then load what it compiled.

    python tests/warm_corpus.py DEVICE FILE:KERNEL ...
    python tests/warm_corpus.py amdgpu
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_corpus_cpu import _program

from kernel_cases import CASES
from ptxport import Device
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.runtime import backends


def _compiled(device: Device, case, gang: bool = True):
    """The case's kernel compiled for `device` (at its block shape), or None where that
    fails: its test reports why."""
    try:
        binary = _program(case.file, gang)._binary(device, case.kernel)
        if hasattr(binary, "prepare"):   # a cpu warp-gang kernel: code per block shape
            binary.prepare(case.block)
        if device.backend == "opencl":   # the OpenCL runtime's build of the SPIR-V
            device._backend._kernel(device.device_id, binary)
        return binary
    except Exception:
        return None


def warm(device_name: str, names: list[str]) -> None:
    device = Device(device_name)
    by_name = {case.name: case for case in CASES}
    cases = [by_name[name] for name in names if name in by_name]   # in the order asked
    binaries = [(case, _compiled(device, case)) for case in cases]
    if device.backend != "cpu":
        return
    # test_kernel_on_cpu_scalar_path runs the kernels that took the gang path thread by thread
    backends.get("cpu").options = CpuOptions(gang=False)
    for case, binary in binaries:
        if binary is not None and binary.gang_refusal is None:
            _compiled(device, case, gang=False)


def warm_amdgpu() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "codegen"))
    from test_amdgpu import _corpus_object

    from corpus import corpus_sources
    from ptxport.codegen.targets import amdgpu

    for path in corpus_sources():
        for chip in amdgpu.CHIPS:
            try:
                _corpus_object(path, chip)
            except Exception:   # its test reports why
                pass


if __name__ == "__main__":
    if sys.argv[1:] == ["amdgpu"]:
        warm_amdgpu()
    else:
        warm(sys.argv[1], sys.argv[2:])
