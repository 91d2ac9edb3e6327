"""Corpus kernels (tests/kernel_cases) on two-member device groups, against the same
references as one device: cpu + cpu, and cpu + opencl:0.

A representative subset runs by default (elementwise, 2-D and 3-D grids, shared memory and
barriers, warp operations, atomics merged as partials, kernels that must run whole); set
PTXPORT_GROUP_ALL=1 to run every case. A kernel one of the devices cannot run alone is not
run on the group either (test_corpus_cpu.py and test_corpus_opencl.py cover those).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_corpus_cpu import NOT_YET as CPU_NOT_YET
from test_corpus_cpu import _program
from test_corpus_opencl import NOT_YET as OPENCL_NOT_YET
from test_corpus_opencl import SKIPPED as OPENCL_SKIPPED

from kernel_cases import CASES, KernelCase, run_case
from ptxport import LaunchConfig
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability
from ptxport.runtime.group import DeviceGroup

SUBSET = {
    "saxpy", "relu", "vector_add_u64", "grid_coords_2d", "grid_coords_3d", "grid_stride_3d",
    "stencil_2d_5pt", "transpose_shared_padded", "sgemm_tiled", "reduce_sum_i32",
    "histogram_global", "atomics_u32", "atomic_add_float", "warp_votes", "scan_block_inclusive",
    "softmax_rows_warp", "sum_last_block", "noinline_calls", "conv1d_const", "globals_read",
}
RUN_ALL = os.environ.get("PTXPORT_GROUP_ALL") == "1"
_OPENCL, _WHY = availability("opencl")
_GROUPS: dict[tuple[str, ...], DeviceGroup] = {}

# kernel -> why a group cannot run it at all
NOT_FOR_GROUPS = {
    "spin_flag_handoff": "one block spins until another has run: blocks on different members "
                         "are not run concurrently with each other's (and OpenCL's are not)",
}


def group_launcher(pair: tuple[str, ...]):
    def launcher(case: KernelCase, args) -> dict[int, np.ndarray]:
        group = _GROUPS.setdefault(pair, DeviceGroup(pair))
        kernel = _program(case.file).get_kernel(case.kernel)
        buffers, params = {}, []
        for i, arg in enumerate(args):
            if arg.kind in ("in", "out", "inout"):
                buffers[i] = group.allocate(max(arg.value.nbytes, 1))
                if arg.value.nbytes:
                    buffers[i].copy_from(np.ascontiguousarray(arg.value).view(np.uint8)
                                         .reshape(-1))
        for i, arg in enumerate(args):
            if arg.passed:
                params.append(buffers.get(i, arg.value))
        group.launch(LaunchConfig(grid=case.grid, block=case.block,
                                  shmem_size=case.shared_bytes), kernel, *params)
        results = {}
        for i, buffer in buffers.items():
            if args[i].kind in ("out", "inout"):
                host = np.empty_like(args[i].value)
                if host.nbytes:
                    buffer.copy_to(host.view(np.uint8).reshape(-1))
                results[i] = host
            buffer.close()
        return results
    return launcher


def _cases():
    for case in CASES:
        if RUN_ALL or case.kernel in SUBSET:
            yield pytest.param(case, id=case.name)


def _skip_reason(case: KernelCase, pair) -> str | None:
    if not nvrtc.available()[0]:
        return "NVRTC is needed for the corpus's PTX"
    if case.kernel in NOT_FOR_GROUPS:
        return NOT_FOR_GROUPS[case.kernel]
    if any(a.kind == "struct" and a.pointers for a in case.make_args(np.random.default_rng(0))):
        return "pointers inside a struct argument are not translated per member"
    if case.kernel in CPU_NOT_YET:
        return f"the cpu device cannot run it: {CPU_NOT_YET[case.kernel]}"
    for name in pair:
        backend = name.partition(":")[0]
        if not availability(backend)[0]:
            return f"no {backend} device: {availability(backend)[1]}"
    if "opencl:0" in pair:
        if not _OPENCL:
            return f"no OpenCL device for SPIR-V: {_WHY}"
        why = OPENCL_NOT_YET.get(case.kernel) or OPENCL_SKIPPED.get(case.kernel)
        if why:
            return f"opencl:0 cannot run it: {why}"
    return None


# PTXPORT_GROUP_PAIR="cuda:0,cpu" adds a pair of one's choice (on the GPU machine)
_EXTRA = tuple(os.environ.get("PTXPORT_GROUP_PAIR", "").split(",")) \
    if os.environ.get("PTXPORT_GROUP_PAIR") else None
PAIRS = [("cpu", "cpu"), ("cpu", "opencl:0")] + ([_EXTRA] if _EXTRA else [])


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
@pytest.mark.parametrize("case", list(_cases()))
def test_kernel_on_group(case: KernelCase, pair):
    reason = _skip_reason(case, pair)
    if reason:
        pytest.skip(reason)
    run_case(case, group_launcher(pair))
