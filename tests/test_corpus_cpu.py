"""The whole kernel corpus on the CPU device, through the public API, against numpy.

Every case of tests/kernel_cases runs here. A kernel that needs an instruction the CPU
target does not lower yet is listed in NOT_YET with the reason, and its test asserts that
it is still refused with UnsupportedFeatureError (so the list cannot silently go stale:
when support lands, the test fails until the kernel is taken off the list).
"""

from __future__ import annotations

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from kernel_cases import CASES, KernelCase, run_case
from kernel_cases.runtime import run_on_device
from ptxport import Device, Program
from ptxport.errors import UnsupportedFeatureError

# kernel name -> why it cannot run on the CPU yet
NOT_YET: dict[str, str] = {}

_PROGRAMS: dict[str, object] = {}


def _program(file: str):
    if file not in _PROGRAMS:
        ptx = corpus_ptx(KERNEL_DIR / file, "sm_80")
        _PROGRAMS[file] = Program(ptx, code_type="ptx").compile("native")
    return _PROGRAMS[file]


def cpu_launcher(case: KernelCase, args) -> dict[int, np.ndarray]:
    """The kernel_cases launcher contract, on Device("cpu")."""
    kernel = _program(case.file).get_kernel(case.kernel)
    return run_on_device(Device("cpu"), kernel, case, args)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_on_cpu(case: KernelCase):
    if case.kernel in NOT_YET:
        with pytest.raises(UnsupportedFeatureError):
            run_case(case, cpu_launcher)
        return
    run_case(case, cpu_launcher)
