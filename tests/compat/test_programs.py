"""Unmodified nvcc-built programs (static cudart) under `ptxport run --device cpu`."""

from __future__ import annotations

import pytest


def test_vector_add(build, ptxport_run):
    result = ptxport_run(build("vector_add"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "launch: no error", "sync: no error", "c[0]=3 c[4999]=-2496.5 wrong=0"], result.stderr


def test_device_query(build, ptxport_run):
    result = ptxport_run(build("device_query"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "count: 1 (cudaSuccess)"
    assert lines[1] == "properties: cudaSuccess"
    assert lines[2].startswith("name: ptxport cpu:0 (")
    assert lines[3:] == [
        "compute capability: 9.0", "warp size: 32", "max threads per block: 1024",
        "max block: 1024 1024 64", "shared per block: 49152", "unified addressing: 1",
        "multiprocessors positive: 1", "current device: 0",
        "set device 3: cudaErrorInvalidDevice"]


def test_streams_and_events(build, ptxport_run):
    result = ptxport_run(build("streams_events"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "event sync: cudaSuccess", "elapsed: cudaSuccess non-negative",
        "stream query: cudaSuccess", "event query: cudaSuccess", "wrong: 0"], result.stderr


def test_unsupported_call_is_named_and_the_program_goes_on(build, ptxport_run):
    result = ptxport_run(build("unsupported"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["ipc: cudaErrorNotSupported", "after: 7 7"]
    assert result.stderr.count("cuIpcGetMemHandle is not supported yet") == 1, result.stderr


def test_trace_lists_every_call(build, ptxport_run, tmp_path):
    trace = tmp_path / "trace.txt"
    result = ptxport_run(build("vector_add"), trace=trace)
    assert result.returncode == 0, result.stderr
    calls = trace.read_text().splitlines()
    assert any(line.startswith("cuLaunchKernel(f=") and line.endswith("-> 0") for line in calls)
    assert any(line.startswith("cuMemAlloc_v2(dptr=") for line in calls)
    assert any(line.startswith("cuGetProcAddress_v2(symbol='cuMemAlloc'") for line in calls)
    assert any(line.startswith("INTEGRITY_CHECK[1](version=") for line in calls)


def test_kernel_fault_is_sticky_and_explained(build, ptxport_run):
    result = ptxport_run(build("illegal_address"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "launch: cudaSuccess", "sync: cudaErrorIllegalAddress",
        "memcpy after: cudaErrorIllegalAddress", "reset: cudaSuccess",
        "malloc after reset: cudaSuccess", "memcpy after reset: cudaSuccess"]
    assert "ptxport: cuCtxSynchronize:" in result.stderr
    assert "wild" in result.stderr, result.stderr


def test_constant_and_device_symbols(build, ptxport_run):
    result = ptxport_run(build("symbols"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "to symbol: cudaSuccess", "from symbol: cudaSuccess", "address: cudaSuccess 1",
        "counter: 105 wrong: 0"], result.stderr


def test_memory_forms(build, ptxport_run):
    result = ptxport_run(build("memory_forms"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "pitch alloc: cudaSuccess 1", "2d wrong: 0", "stream: cudaSuccess result 7 flag 42",
        "attributes: cudaSuccess max threads 1024"], result.stderr


def test_kernel_printf_between_host_output(build, ptxport_run):
    result = ptxport_run(build("kernel_printf"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "before", "thread 0 of 4", "thread 1 of 4", "after"], result.stderr


def test_error_codes_without_a_fault(build, ptxport_run):
    result = ptxport_run(build("error_codes"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # Which code cudart makes of the driver's refusal of a block too large (the driver's is
    # CUDA_ERROR_INVALID_VALUE) is to be checked against NVIDIA's on a GPU; that it fails,
    # and why, is certain.
    assert lines[0].startswith("block 2048: cudaError") and lines[0] != "block 2048: cudaSuccess"
    assert lines[1].startswith("block z 128: cudaError")
    assert lines[2:] == ["huge malloc: cudaErrorMemoryAllocation",
                         "then: cudaErrorMemoryAllocation", "double free: cudaErrorInvalidValue",
                         "good launch: cudaErrorInvalidValue cudaSuccess"]
    assert "a block may have at most 1024" in result.stderr
    assert "block.z may be at most 64" in result.stderr


@pytest.mark.parametrize("program, expected", [
    ("vector_add", ["launch: no error", "sync: no error", "c[0]=3 c[4999]=-2496.5 wrong=0"]),
    ("streams_events", ["event sync: cudaSuccess", "elapsed: cudaSuccess non-negative",
                        "stream query: cudaSuccess", "event query: cudaSuccess", "wrong: 0"]),
])
def test_programs_on_opencl(build, ptxport_run, program, expected):
    from ptxport.runtime import backends

    ok, why = backends.availability("opencl")
    if not ok:
        pytest.skip(f"no OpenCL device: {why}")
    result = ptxport_run(build(program), device="opencl:0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == expected, result.stderr


def test_templates_and_two_translation_units(build, ptxport_run):
    binary = build("two_units", units=("two_units_main", "two_units_other"))
    result = ptxport_run(binary)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["10 2 104 cudaSuccess"], result.stderr


def test_3d_copies_and_pointer_attributes(build, ptxport_run):
    result = ptxport_run(build("copies_3d"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "malloc3d: cudaSuccess", "memset3d: cudaSuccess", "up: cudaSuccess",
        "down: cudaSuccess", "copied 32 wrong 0", "device pointer: cudaSuccess type 2",
        "host pointer: cudaSuccess type 0"], result.stderr
    assert result.stderr == ""


def test_async_copies_with_pageable_memory(build, ptxport_run):
    result = ptxport_run(build("pageable_async"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["read at once: 1", "after sync: 1"], result.stderr


def test_managed_memory_and_host_threads(build, ptxport_run):
    result = ptxport_run(build("threads_managed"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "managed: cudaSuccess", "managed wrong: 0", "threads: 256 512 768 1024"], result.stderr


def test_program_with_shared_cudart(build, ptxport_run):
    binary = build("vector_add_shared", "-cudart", "shared", units=("vector_add",))
    result = ptxport_run(binary)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "launch: no error", "sync: no error", "c[0]=3 c[4999]=-2496.5 wrong=0"], result.stderr


def test_graph_made_by_stream_capture(build, ptxport_run):
    result = ptxport_run(build("graph_capture"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "begin: cudaSuccess", "capturing: 1", "end: cudaSuccess",
        "nothing ran during capture: 0", "instantiate: cudaSuccess",
        "after 3 launches: cudaSuccess 33 33"], result.stderr


def test_driver_api_through_dlopen(build, ptxport_run):
    result = ptxport_run(build("driver_api"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "init 0 device 0 context 0", "module 0 function 0",
        "bad module: CUDA_ERROR_INVALID_PTX", "launch 0 sync 0", "values: 3 6 9 12 15",
        "destroy 0"], result.stderr
    assert "cuModuleLoadData:3:1: error: expected a directive" in result.stderr


def test_dynamic_shared_memory_and_cooperative_groups(build, ptxport_run):
    result = ptxport_run(build("shared_memory"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "opt in: cudaSuccess", "sync: cudaSuccess sums 1140 1148 wrong 0"], result.stderr


def test_blocking_launches(build, ptxport_run):
    """CUDA_LAUNCH_BLOCKING=1 (CUDA's switch): each launch has run when it returns."""
    result = ptxport_run(build("blocking_launch"), env={"CUDA_LAUNCH_BLOCKING": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["flag at return: 1", "flag after sync: 1"]
    result = ptxport_run(build("streams_events"), env={"CUDA_LAUNCH_BLOCKING": "1"})
    assert result.stdout.splitlines()[-1] == "wrong: 0", result.stderr


def test_per_thread_default_streams(build, ptxport_run, tmp_path):
    trace = tmp_path / "trace.txt"
    result = ptxport_run(build("per_thread_stream", "--default-stream", "per-thread"),
                         trace=trace)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["sums: 64 128", "own streams: 1"], result.stderr
    assert "cuLaunchKernel_ptsz(" in trace.read_text()


def test_program_without_ptx_is_told_how_to_rebuild(build, ptxport_run):
    binary = build("vector_add_sass", "-gencode", "arch=compute_80,code=sm_80",
                   units=("vector_add",))
    result = ptxport_run(binary)
    assert result.stdout.splitlines()[0] == "launch: no kernel image is available for " \
        "execution on the device", result.stderr
    assert "machine code only (sm_80) and no PTX" in result.stderr
    assert "rebuild it with nvcc -arch=sm_XX" in result.stderr


def test_registered_host_memory(build, ptxport_run):
    result = ptxport_run(build("host_register"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "register: cudaSuccess", "again: cudaErrorHostMemoryAlreadyRegistered",
        "device pointer: cudaSuccess 1", "kernel: cudaSuccess 9 3969",
        "unregister: cudaSuccess", "unregister again: cudaErrorHostMemoryNotRegistered"]


def test_graph_capture_across_two_streams(build, ptxport_run):
    result = ptxport_run(build("graph_fork_join"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "capture: cudaSuccess", "launches: cudaSuccess a 202 b 20"], result.stderr
