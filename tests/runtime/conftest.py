"""Runtime test fixtures: PTX kernels, and a fake CPU code generator that runs each kernel as
a Python function, so that the runtime is tested apart from the real code generator.

A fake kernel is `fn(grid, block, dynamic_shared, *args)`, args decoded from the parameter
buffer by the kernel's parameter types (pointers arrive as int addresses; structs as bytes).
"""

import ctypes

import numpy as np
import pytest

from ptxport.errors import UnsupportedFeatureError
from ptxport.ir.abi import param_layout
from ptxport.runtime import backends

# NVRTC 13.5's output for examples/saxpy.cu's saxpy.
SAXPY_PTX = """
.version 9.5
.target sm_80
.address_size 64

.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;

	ld.param.f32 	%f1, [saxpy_param_0];
	ld.param.u64 	%rd1, [saxpy_param_1];
	ld.param.u64 	%rd2, [saxpy_param_2];
	ld.param.u32 	%r2, [saxpy_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.nc.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;

$L__BB0_2:
	ret;
}
"""

# Kernels whose bodies barely matter: the fakes give them their meaning.
MISC_PTX = """
.version 8.0
.target sm_80
.address_size 64

// A struct by value ({float scale; int pad; double offset;}) and an output pointer.
.visible .entry store_struct(
	.param .align 8 .b8 store_struct_param_0[16],
	.param .u64 store_struct_param_1
)
{
	.reg .f32 	%f<2>;
	.reg .b64 	%rd<3>;
	ld.param.f32 	%f1, [store_struct_param_0];
	ld.param.u64 	%rd1, [store_struct_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.f32 	[%rd2], %f1;
	ret;
}

// 4 KiB of static shared memory and at most 128 threads per block.
.visible .entry tile(
	.param .u64 tile_param_0
)
.maxntid 128, 1, 1
{
	.shared .align 4 .b8 tile_buffer[4096];
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [tile_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.shared.u32 	%r1, [tile_buffer];
	st.global.u32 	[%rd2], %r1;
	ret;
}

// Scalars of every kind; `big` and `unused` are 8-byte values never used as addresses.
.visible .entry scalars(
	.param .f64 scalars_param_0,
	.param .u8 scalars_param_1,
	.param .s64 scalars_param_2,
	.param .u64 scalars_param_3,
	.param .u16 scalars_param_4
)
{
	.reg .f64 	%fd<2>;
	.reg .b64 	%rd<2>;
	ld.param.f64 	%fd1, [scalars_param_0];
	ld.param.s64 	%rd1, [scalars_param_2];
	ret;
}

// Stream-order probe: the fake sleeps `delay_ms`, then logs `value`.
.visible .entry mark(
	.param .u32 mark_param_0,
	.param .u32 mark_param_1
)
{
	ret;
}

// A kernel whose fake fails.
.visible .entry fault(
	.param .u32 fault_param_0
)
{
	ret;
}
"""

_SCALAR_DTYPES = {"f32": np.float32, "f64": np.float64, "u8": np.uint8, "u16": np.uint16,
                  "u32": np.uint32, "s32": np.int32, "s64": np.int64, "u64": np.uint64}


def host_array(address: int, count: int, dtype) -> np.ndarray:
    """`count` elements of `dtype` at a host address (what a CPU kernel sees)."""
    dtype = np.dtype(dtype)
    return np.frombuffer((ctypes.c_char * (count * dtype.itemsize)).from_address(address), dtype)


class FakeBinary:
    """A CpuKernelBinary look-alike running a Python function over the whole grid."""

    def __init__(self, function, body, calls):
        self.name = function.name
        self._slots, _ = param_layout(function)
        self._body, self._calls = body, calls

    def launch(self, grid, block, dynamic_shared, params, allocations=None, timeout=None):
        args = []
        for slot in self._slots:
            raw = params[slot.offset:slot.offset + slot.size]
            if slot.variable.dims:
                args.append(bytes(raw))
            else:
                args.append(np.frombuffer(raw, _SCALAR_DTYPES[slot.variable.type.name])[0])
        self._calls.append((self.name, grid, block, dynamic_shared))
        self._body(grid, block, dynamic_shared, *args)


class FakeKernels(dict):
    """name -> Python body; `compiled` lists the kernels compiled, `calls` the launches."""

    def __init__(self):
        super().__init__()
        self.compiled: list[str] = []
        self.calls: list[tuple] = []

    def compile_kernel(self, module, name):
        if name not in self:
            raise UnsupportedFeatureError(name, "fake cpu", reason="no Python fake for it")
        self.compiled.append(name)
        return FakeBinary(module.functions[name], self[name], self.calls)


def fake_saxpy(grid, block, dynamic_shared, a, x, y, n):
    i = np.arange(grid[0] * block[0])
    i = i[i < n]
    xs, ys = host_array(int(x), int(n), np.float32), host_array(int(y), int(n), np.float32)
    ys[i] = a * xs[i] + ys[i]


@pytest.fixture
def fake_kernels(monkeypatch) -> FakeKernels:
    """Make the CPU backend compile kernels into FakeBinary objects (saxpy preloaded)."""
    kernels = FakeKernels()
    kernels["saxpy"] = fake_saxpy
    monkeypatch.setattr(backends.get("cpu"), "kernel_compiler", kernels.compile_kernel)
    return kernels


@pytest.fixture
def saxpy_ptx() -> str:
    return SAXPY_PTX


@pytest.fixture
def misc_ptx() -> str:
    return MISC_PTX


@pytest.fixture(name="host_array")
def host_array_fixture():
    """host_array(address, count, dtype): what a CPU kernel sees at an address."""
    return host_array
