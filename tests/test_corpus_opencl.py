"""The whole kernel corpus on opencl:0 (Intel's OpenCL CPU runtime from PyPI in CI), through
the public API, against numpy: the launcher of test_corpus_cpu.py on Device("opencl:0").

A kernel the SPIR-V target cannot run is listed in NOT_YET with the reason, and its test
asserts that it is still refused with UnsupportedFeatureError. Without pyopencl or a device
that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import test_corpus_cpu
from test_corpus_cpu import _program, warm_in_background

from kernel_cases import CASES, KernelCase, run_case
from kernel_cases.runtime import run_on_device
from ptxport import Device
from ptxport.errors import UnsupportedFeatureError
from ptxport.runtime.backends import availability

# kernel name -> why it cannot run on SPIR-V yet
NOT_YET: dict[str, str] = {
    "mbarrier_phases": "mbarrier waits: OpenCL does not promise that a work-group's items "
                       "make progress while one spins (Intel's CPU runtime runs them in turn)",
}

# kernel name -> why it is not run here at all
SKIPPED: dict[str, str] = {
    "spin_flag_handoff": "one work-group spins until another has run: OpenCL does not promise "
                         "that the work-groups of a launch run concurrently, and Intel's CPU "
                         "runtime on a busy 2-core machine ran the spinning one alone and hung",
}

_AVAILABLE, _WHY = availability("opencl")


def start_early(session: pytest.Session) -> None:
    """(tests/conftest.py calls this when collection ends)"""
    if _AVAILABLE:
        warm_in_background(session, __file__, "opencl:0")


def opencl_launcher(case: KernelCase, args) -> dict[int, np.ndarray]:
    """The kernel_cases launcher contract, on Device("opencl:0")."""
    kernel = _program(case.file).get_kernel(case.kernel)
    return run_on_device(Device("opencl:0"), kernel, case, args)


@pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_on_opencl(case: KernelCase):
    if case.kernel in SKIPPED:
        pytest.skip(SKIPPED[case.kernel])
    if case.kernel in NOT_YET:
        with pytest.raises(UnsupportedFeatureError):
            run_case(case, opencl_launcher)
        return
    run_case(case, opencl_launcher)


@pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")
def test_warp_kernels_need_32_wide_sub_groups(monkeypatch):
    from ptxport.runtime.backends import get

    case = next(c for c in CASES if c.kernel == "warp_votes")
    monkeypatch.setattr(get("opencl"), "warp_capable", lambda ordinal: False)
    with pytest.raises(UnsupportedFeatureError, match="sub-groups of 32"):
        run_case(case, opencl_launcher)


@pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")
def test_the_background_compiles_are_what_the_tests_load(tmp_path, monkeypatch):
    """start_early's process (tests/warm_corpus.py) writes the SPIR-V and the OpenCL binary
    this file's tests load: with its cache, a case runs without compiling anything."""
    case = next(c for c in CASES if c.kernel == "saxpy")
    subprocess.run([sys.executable, str(Path(__file__).with_name("warm_corpus.py")),
                    "opencl:0", case.name],
                   env={**os.environ, "PTXPORT_CACHE_DIR": str(tmp_path)}, check=True)
    from ptxport.codegen.targets import spirv
    from ptxport.runtime.backends import opencl_cache

    def compiled(*args):
        raise AssertionError("compiled: the background left no SPIR-V or binary")
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(spirv, "compile_module", compiled)
    monkeypatch.setattr(opencl_cache, "write_entry", compiled)   # after a build from SPIR-V
    monkeypatch.setattr(test_corpus_cpu, "_PROGRAMS", {})
    run_case(case, opencl_launcher)
