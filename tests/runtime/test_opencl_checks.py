"""Bounds checks on opencl:0 (spirv_checks.py): an access outside the memory a launch may
touch is skipped and raises IllegalAddressError after the launch, in the CPU device's
words, and the device stays usable; accesses a kernel may make (its buffers, memory found
through addresses in device memory, its shared memory, local arrays reached through generic
addresses, also from device functions, module variables) are not reported.

Without pyopencl or a device that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.runtime.backends import availability, get
from tests.cpu_harness import index_outside

_AVAILABLE, _WHY = availability("opencl")
pytestmark = pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")

# poke(u32* x, s32 offset, u32 value): x[tid] at `offset` bytes further = value.
# peek(u32* x, s32 offset, u32* out): out[tid] = x[tid] at `offset` bytes further.
# peek_pair(u32* x, s32 offset, u32* out): out[0], out[1] = the two words at `offset` bytes.
# bump(u32* x, s32 offset, u32* out): out[tid] = atomicAdd(x[tid] at `offset` bytes further, 1).
# shared_poke(u32 index, u32* out): writes dynamic shared memory word `index`, then out[0]
#   = what it reads back.
# local_generic(u32* out): a local array written and read through generic addresses, by
#   the kernel and by a device function given the array's address: out[0] = 7, out[1] = 9.
# to_function(u32* p): a device function writes p[1] = 9.
# dynamic_stack(u32* out): memory from alloca, through generic addresses: out[0] = 6.
# variable(u32 index, u32* out): out[0] = table[index], for a .global variable table of 4.
PTX = """
.version 8.0
.target sm_80
.address_size 64

.global .align 4 .u32 table[4] = {10, 11, 12, 13};
.extern .shared .align 4 .b8 smem[];

.func fill(.param .b64 fill_p)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [fill_p];
    st.u32 [%rd1+4], 9;
    ret;
}

.visible .entry poke(.param .u64 x, .param .s32 offset, .param .u32 value)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [x];
    ld.param.s32 %r3, [offset];
    cvt.s64.s32 %rd2, %r3;
    ld.param.u32 %r1, [value];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd2;
    add.s64 %rd5, %rd4, %rd3;
    st.global.u32 [%rd5], %r1;
    ret;
}

.visible .entry peek(.param .u64 x, .param .s32 offset, .param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x];
    ld.param.s32 %r3, [offset];
    cvt.s64.s32 %rd2, %r3;
    ld.param.u64 %rd6, [out];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd2;
    add.s64 %rd5, %rd4, %rd3;
    ld.global.u32 %r1, [%rd5];
    add.s64 %rd7, %rd6, %rd3;
    st.global.u32 [%rd7], %r1;
    ret;
}

.visible .entry peek_pair(.param .u64 x, .param .s32 offset, .param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [x];
    ld.param.s32 %r3, [offset];
    cvt.s64.s32 %rd2, %r3;
    ld.param.u64 %rd3, [out];
    add.s64 %rd1, %rd1, %rd2;
    mov.u32 %r1, 1;
    ld.global.v2.u32 {%r1, %r2}, [%rd1];
    st.global.v2.u32 [%rd3], {%r1, %r2};
    ret;
}

.visible .entry bump(.param .u64 x, .param .s32 offset, .param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x];
    ld.param.s32 %r3, [offset];
    cvt.s64.s32 %rd2, %r3;
    ld.param.u64 %rd6, [out];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd2;
    add.s64 %rd5, %rd4, %rd3;
    atom.global.add.u32 %r1, [%rd5], 1;
    add.s64 %rd7, %rd6, %rd3;
    st.global.u32 [%rd7], %r1;
    ret;
}

.visible .entry shared_poke(.param .u32 index, .param .u64 out)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<2>;
    ld.param.u32 %r1, [index];
    ld.param.u64 %rd1, [out];
    mov.u32 %r2, smem;
    shl.b32 %r3, %r1, 2;
    add.s32 %r2, %r2, %r3;
    st.shared.u32 [%r2], 5;
    ld.shared.u32 %r4, [%r2];
    st.global.u32 [%rd1], %r4;
    ret;
}

.visible .entry local_generic(.param .u64 out)
{
    .local .align 4 .b8 buf[16];
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, buf;
    cvta.local.u64 %rd3, %rd2;
    st.u32 [%rd3+8], 7;
    ld.u32 %r1, [%rd3+8];
    st.global.u32 [%rd1], %r1;
    {
        .param .b64 param0;
        st.param.b64 [param0], %rd3;
        call.uni fill, (param0);
    }
    ld.u32 %r2, [%rd3+4];
    st.global.u32 [%rd1+4], %r2;
    ret;
}

.visible .entry to_function(.param .u64 p)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    {
        .param .b64 param0;
        st.param.b64 [param0], %rd1;
        call.uni fill, (param0);
    }
    ret;
}

.visible .entry dynamic_stack(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    alloca.u64 %rd2, 16;
    cvta.local.u64 %rd3, %rd2;
    st.u32 [%rd3+4], 6;
    ld.u32 %r1, [%rd3+4];
    st.global.u32 [%rd1], %r1;
    ret;
}

.visible .entry variable(.param .u32 index, .param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<6>;
    ld.param.u32 %r2, [index];
    cvt.u64.u32 %rd1, %r2;
    ld.param.u64 %rd2, [out];
    mov.u64 %rd3, table;
    cvta.global.u64 %rd4, %rd3;
    shl.b64 %rd1, %rd1, 2;
    add.s64 %rd5, %rd4, %rd1;
    ld.u32 %r1, [%rd5];
    st.global.u32 [%rd2], %r1;
    ret;
}
"""


@pytest.fixture(params=["svm", "translated"])
def scheme(request, monkeypatch) -> str:
    """Each test on each address scheme: "svm" where opencl:0 has it, "translated" always."""
    backend = get("opencl")
    if request.param == "svm" and backend.address_scheme(0) != "svm":
        pytest.skip("opencl:0 has no coarse-grained buffer SVM")
    if request.param == "translated":
        monkeypatch.setattr(backend, "_svm_allowed", False)
    return request.param


@pytest.fixture(scope="module")
def program():
    return Program(PTX, code_type="ptx").compile("native")


@pytest.fixture
def stream():
    dev = Device("opencl:0")
    dev.set_current()
    return dev.create_stream()


def _zeros(stream, words: int):
    buf = stream.device.allocate(4 * words, stream=stream)
    buf.copy_from(np.zeros(words, np.uint32), stream=stream)
    return buf


def _read(stream, buf, words: int) -> np.ndarray:
    host = np.empty(words, np.uint32)
    buf.copy_to(host, stream=stream)
    stream.sync()
    return host


def _run(stream, program, name, grid, block, *args, shared=0):
    launch(stream, LaunchConfig(grid=grid, block=block, shmem_size=shared),
           program.get_kernel(name), *args)
    stream.sync()


def test_a_write_far_past_a_buffer_raises_and_the_device_stays_usable(scheme, program, stream):
    x = _zeros(stream, 1024)
    far = np.int32(index_outside(stream.device, x, itemsize=1, span=4 * 32))   # (bytes)
    with pytest.raises(IllegalAddressError) as caught:
        _run(stream, program, "poke", 1, 32, x, far, np.uint32(1))
    message = str(caught.value)
    assert "kernel 'poke' wrote 4 bytes at address " in message
    line = PTX.splitlines().index("    st.global.u32 [%rd5], %r1;") + 1
    assert f"outside every allocation, at line {line} in block (0, 0, 0), thread " in message
    assert "nothing was written there and the device is still usable" in message
    # the fault was this launch's: the next, correct one neither raises nor misses writes
    _run(stream, program, "poke", 1, 32, x, np.int32(0), np.uint32(3))
    assert (_read(stream, x, 1024)[:32] == 3).all()


def test_the_first_byte_past_the_end_is_reported_with_its_thread(scheme, program, stream):
    x = _zeros(stream, 32)
    with pytest.raises(IllegalAddressError, match=r"wrote 4 bytes .* block \(0, 0, 0\), "
                                                  r"thread 31;"):
        _run(stream, program, "poke", 1, 32, x, np.int32(4), np.uint32(2))
    # threads 0..30 wrote words 1..31; thread 31's word 32 is past the end: skipped
    assert list(_read(stream, x, 32)) == [0] + [2] * 31


def test_a_bad_read_loads_zero(scheme, program, stream):
    x, out = _zeros(stream, 32), _zeros(stream, 32)
    x.copy_from(np.arange(1, 33, dtype=np.uint32), stream=stream)
    with pytest.raises(IllegalAddressError, match="kernel 'peek' read 4 bytes"):
        _run(stream, program, "peek", 1, 32, x, np.int32(64), out)
    assert list(_read(stream, out, 32)) == list(range(17, 33)) + [0] * 16


def test_a_bad_vector_load_loads_zeros(scheme, program, stream):
    x, out = _zeros(stream, 4), _zeros(stream, 2)
    x.copy_from(np.arange(1, 5, dtype=np.uint32), stream=stream)
    _run(stream, program, "peek_pair", 1, 1, x, np.int32(8), out)
    assert list(_read(stream, out, 2)) == [3, 4]
    with pytest.raises(IllegalAddressError, match="kernel 'peek_pair' read 8 bytes"):
        _run(stream, program, "peek_pair", 1, 1, x, np.int32(12), out)
    assert list(_read(stream, out, 2)) == [0, 0]


def test_the_bytes_just_before_a_buffer_are_outside_it(scheme, program, stream):
    x, out = _zeros(stream, 4), _zeros(stream, 4)
    x.copy_from(np.arange(1, 5, dtype=np.uint32), stream=stream)
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes .* thread 0;"):
        _run(stream, program, "peek", 1, 4, x, np.int32(-4), out)
    assert list(_read(stream, out, 4)) == [0, 1, 2, 3]


def test_a_bad_atomic_is_skipped_and_returns_zero(scheme, program, stream):
    x, out = _zeros(stream, 4), _zeros(stream, 8)
    x.copy_from(np.full(4, 5, np.uint32), stream=stream)
    with pytest.raises(IllegalAddressError, match="kernel 'bump' wrote 4 bytes"):
        _run(stream, program, "bump", 1, 8, x, np.int32(0), out)
    assert list(_read(stream, out, 8)) == [5] * 4 + [0] * 4
    assert list(_read(stream, x, 4)) == [6] * 4


def test_shared_memory_past_the_launch_size_is_reported(scheme, program, stream):
    out = _zeros(stream, 1)
    _run(stream, program, "shared_poke", 1, 1, np.uint32(15), out, shared=64)
    assert _read(stream, out, 1)[0] == 5
    with pytest.raises(IllegalAddressError, match=r"wrote 4 bytes at shared memory address "
                                                  r"0x40, outside the block's 64 bytes"):
        _run(stream, program, "shared_poke", 1, 1, np.uint32(16), out, shared=64)


def test_local_arrays_through_generic_addresses_are_allowed(scheme, program, stream):
    out = _zeros(stream, 2)
    _run(stream, program, "local_generic", 2, 32, out)
    assert list(_read(stream, out, 2)) == [7, 9]


def test_alloca_memory_through_generic_addresses_is_allowed(scheme, program, stream):
    out = _zeros(stream, 1)
    _run(stream, program, "dynamic_stack", 1, 4, out)
    assert _read(stream, out, 1)[0] == 6


def test_device_functions_are_checked(scheme, program, stream):
    x = _zeros(stream, 2)
    _run(stream, program, "to_function", 1, 1, x)
    assert list(_read(stream, x, 2)) == [0, 9]
    with pytest.raises(IllegalAddressError, match="kernel 'to_function' wrote 4 bytes"):
        _run(stream, program, "to_function", 1, 1, np.uint64(x.handle + 4))


def test_freed_memory_is_outside_every_allocation(scheme, program, stream):
    x = _zeros(stream, 2)
    address = np.uint64(x.handle)
    _run(stream, program, "to_function", 1, 1, address)
    x.close()
    with pytest.raises(IllegalAddressError, match="kernel 'to_function' wrote 4 bytes"):
        _run(stream, program, "to_function", 1, 1, address)


def test_module_variables_are_allowed_to_their_end(scheme, program, stream):
    out = _zeros(stream, 1)
    _run(stream, program, "variable", 1, 1, np.uint32(3), out)
    assert _read(stream, out, 1)[0] == 13
    with pytest.raises(IllegalAddressError, match="kernel 'variable' read 4 bytes"):
        _run(stream, program, "variable", 1, 1, np.uint32(4), out)


def test_ptxport_devices_says_what_is_checked(capsys):
    from ptxport.cli import main

    assert main(["devices"]) == 0
    said = get("opencl").bounds_checks(0)
    assert f"opencl:0: bounds checks: {said}\n" in capsys.readouterr().out
    assert said.startswith("global, const, generic and shared accesses, against ")
    assert said.endswith("a bad access is skipped and raises IllegalAddressError")


# poke_line(u32* x, s32 offset): x at `offset` bytes = 1, with line information (k.cu:7).
PTX_WITH_LINES = """
.version 8.0
.target sm_80
.address_size 64
.file 1 "/home/user/k.cu"

.visible .entry poke_line(.param .u64 x, .param .s32 offset)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [x];
    ld.param.s32 %r1, [offset];
    cvt.s64.s32 %rd2, %r1;
    add.s64 %rd3, %rd1, %rd2;
    .loc 1 7 5
    st.global.u32 [%rd3], 1;
    ret;
}
"""


def test_a_fault_names_the_users_source_line_first(scheme, stream):
    program = Program(PTX_WITH_LINES, code_type="ptx").compile("native")
    x = _zeros(stream, 4)
    far = np.int32(index_outside(stream.device, x, itemsize=1))      # (bytes)
    line = PTX_WITH_LINES.splitlines().index("    st.global.u32 [%rd3], 1;") + 1
    with pytest.raises(IllegalAddressError, match=rf"outside every allocation, at k\.cu:7 "
                                                  rf"\(PTX line {line}\) in block \(0, 0, 0\), "
                                                  r"thread 0; nothing was written"):
        _run(stream, program, "poke_line", 1, 1, x, far)
