"""Run a PTX kernel on the CPU target directly (below the runtime API), for codegen tests.

    run_ptx(ptx, "k", grid=(2,), block=(64,), args=[out_array, np.int32(5)])

numpy arrays are passed as pointers to their data (the kernel reads and writes them in
place); numpy scalars and structured scalars are passed by value.

    launch_on_cpu(ptx, LaunchConfig(grid=2, block=64), in_array, out_array, np.uint32(5))

does the same through the public API on Device("cpu") (device buffers, the disk cache of
compiled kernels, the runtime's range checks and fault messages) and returns the kernel's
CPU binary (its gang_refusal says whether it ran as warp gangs).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.ir.abi import param_layout
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends.cpu.kernels import compile_kernel

_CACHE: dict = {}


def compile_ptx(ptx: str, kernel: str):
    key = (ptx, kernel)
    if key not in _CACHE:
        module = build(parse(ptx, "test.ptx"))
        verify(module)
        _CACHE[key] = (module, compile_kernel(module, kernel))
    return _CACHE[key]


def _dims(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    return d + (1,) * (3 - len(d))


def run_ptx(ptx: str, kernel: str, grid, block, args: list, shared: int = 0) -> None:
    module, binary = compile_ptx(ptx, kernel)
    slots, size = param_layout(module.functions[kernel])
    assert len(slots) == len(args), f"{kernel} takes {len(slots)} arguments"
    buffer = bytearray(size)
    for slot, arg in zip(slots, args, strict=True):
        if isinstance(arg, np.ndarray):
            data = np.uint64(arg.ctypes.data).tobytes()
        else:
            data = np.asarray(arg).tobytes()
        assert len(data) == slot.size, f"argument for {slot.name}: {len(data)} bytes"
        buffer[slot.offset:slot.offset + slot.size] = data
    allocations = [(a.ctypes.data, a.nbytes) for a in args if isinstance(a, np.ndarray)]
    binary.launch(_dims(grid), _dims(block), shared, bytes(buffer), allocations)


def launch_on_cpu(ptx: str, config: LaunchConfig, *args, kernel: str = "k"):
    """Launch `kernel` of `ptx` on Device("cpu") through the public API: each numpy array
    among `args` as a device buffer holding a copy of it (copied back into the array after
    the launch), anything else (numpy scalars, buffers) as it is. The kernel's CPU binary;
    a launch that faults raises its error (IllegalAddressError, ...)."""
    device = Device("cpu")
    stream = device.create_stream()
    compiled = Program(ptx, code_type="ptx").compile("native").get_kernel(kernel)
    buffers = {}
    for i, arg in enumerate(args):
        if isinstance(arg, np.ndarray):
            buffers[i] = device.allocate(max(arg.nbytes, 1), stream=stream)
            buffers[i].copy_from(arg, stream=stream)
    launch(stream, config, compiled, *(buffers.get(i, arg) for i, arg in enumerate(args)))
    for i, buffer in buffers.items():
        buffer.copy_to(args[i], stream=stream)
    stream.sync()
    return compiled._binary(device)


def assert_same_words(got: np.ndarray, want: np.ndarray) -> None:
    """got == want bit for bit (integer arrays, e.g. doubles' words), the first four
    differing (row, column, got, want) in hex where not."""
    bad = np.argwhere(got != want)
    assert not len(bad), [(int(r), int(c), hex(int(got[r, c])), hex(int(want[r, c])))
                          for r, c in bad[:4]]


def in_child(code: str, stdin: str = "", timeout: float = 180) -> str:
    """The standard output of `code` run by a new Python (with this one's sys.path) that
    reads `stdin`: for launches that might hang in compiled code, which no launch timeout
    stops. Past `timeout` seconds the child is killed and the test fails."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    try:
        done = subprocess.run([sys.executable, "-c", code], input=stdin, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the child did not end in {timeout} s (a hang)") from None
    assert done.returncode == 0, done.stderr
    return done.stdout


def checked_ranges(device) -> list[tuple[int, int]]:
    """(address, size) of every range `device` checks kernels' global accesses against now,
    besides a launch's own (its module's variables, parameters, a worker's shared memory and
    frames): on cpu its live allocations, registered host memory and the device heap; on
    opencl its SVM allocations and registered host memory (the "translated" scheme checks an
    access against its own buffer: an address outside these is outside that too)."""
    backend = device._backend
    if backend.name == "cpu":
        from ptxport.runtime.backends.cpu.heap import HEAP

        heap = HEAP.range()
        return [*backend._live_ranges(), *([heap] if heap is not None else [])]
    if backend.name == "opencl":
        return [(start, memory.size) for start, memory in list(backend._live.items())
                if memory.svm and memory.size]
    raise ValueError(f"no table of live ranges known for {backend.name}")


def outside(ranges, address: int, span: int, margin: int) -> bool:
    """Whether [address, address + span) lies `margin` bytes or more from each range."""
    return address >= 1 << 16 and all(address + span + margin <= start
                                      or start + size + margin <= address
                                      for start, size in ranges)


def index_outside(device, buffer, itemsize: int = 4, margin: int = 1 << 20,
                  signed: bool = True, span: int | None = None) -> int:
    """An element index i (an int32, or a uint32 where not `signed`) for which the `span`
    bytes (default `itemsize`) at `buffer`'s address + i * itemsize lie outside every range
    `device` checks accesses against now (checked_ranges), by `margin` bytes at least: a
    fixed index such as 1 << 24 sometimes lands in another test's live allocation (CI saw
    it), and the access is then legal. Fault tests take their bad index (or, with itemsize
    1, their bad byte offset) from here. `buffer`: a Buffer or an address."""
    base = int(getattr(buffer, "handle", buffer))
    ranges = checked_ranges(device)
    limit = (1 << 31) - 1 if signed else (1 << 32) - 1
    for shift in range(24, 32 if signed else 33):
        for i in (1 << shift, -(1 << shift)) if signed else (1 << shift,):
            i = max(-limit - 1 if signed else 0, min(i, limit))
            if outside(ranges, base + i * itemsize, span or itemsize, margin):
                return i
    raise AssertionError(f"no {'int32' if signed else 'uint32'} index from {base:#x} lies "
                         f"outside the {len(ranges)} live ranges")


def allocate_alone(device, nbytes: int, stream, near: int = 1 << 30, far: int = 1 << 35):
    """A buffer of `nbytes` on `device` with no live range (checked_ranges) between `near`
    and `far` bytes from it on either side. Tests whose lanes fault at an address fixed by a
    32-bit index's wrap (2 to 16 GiB from their buffer) allocate that buffer here, after
    their others, so that no allocation alive there makes the access legal: where one is,
    another buffer is tried (the refused ones kept meanwhile, so that it lies elsewhere)."""
    refused = []
    try:
        for _ in range(8):
            buffer = device.allocate(nbytes, stream=stream)
            start, end = int(buffer.handle), int(buffer.handle) + nbytes
            bands = [(start - far, start - near), (end + near, end + far)]
            if not any(s < high and low < s + n for s, n in checked_ranges(device)
                       for low, high in bands):
                return buffer
            refused.append(buffer)
    finally:
        for buffer in refused:
            buffer.close(stream=stream)
    raise AssertionError(f"every buffer of {nbytes} bytes had a live range {near:#x} to "
                         f"{far:#x} bytes from it")


def kernel_ptx(body: str, params: str, extra: str = "", target: str = "sm_80",
               version: str = "8.0") -> str:
    """A module with one kernel `k`, for small tests."""
    return (f".version {version}\n.target {target}\n.address_size 64\n{extra}\n"
            f".visible .entry k({params})\n{{\n{body}\n}}\n")


SWEEP_BLOCK = 256
_UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def sweep(insts: list[str], inputs: list, bits: int, out_bits: int | None = None,
          regs: str = "", target: str = "sm_90", version: str = "8.7") -> list[np.ndarray]:
    """Each instruction (text over %a %b %c, .b<bits> registers loaded from the input
    columns, writing %d, a .b<out_bits> register; %p %q %pc are predicates free to use) on
    every element of the input columns, on the CPU target; one output column (raw bits) per
    instruction."""
    out_bits = out_bits or bits
    count = len(inputs[0])
    padded = -(-count // SWEEP_BLOCK) * SWEEP_BLOCK
    columns = []
    for values in inputs:
        column = np.zeros(padded, _UINT[bits])
        column[:count] = np.asarray(values, dtype=np.uint64).astype(_UINT[bits])
        columns.append(column)
    outputs = [np.zeros(padded, _UINT[out_bits]) for _ in insts]
    names = "abc"[:len(inputs)]
    lines = [".reg .u32 %i, %t; .reg .u64 %off, %ptr; .reg .pred %p, %q, %pc;",
             f".reg .b{bits} %a, %b, %c; .reg .b{out_bits} %d; {regs}",
             "mov.u32 %t, %tid.x; mov.u32 %i, %ctaid.x;",
             f"mad.lo.u32 %i, %i, {SWEEP_BLOCK}, %t;"]
    for name in names:
        lines.append(f"ld.param.u64 %ptr, [p_{name}]; mul.wide.u32 %off, %i, {bits // 8}; "
                     f"add.u64 %ptr, %ptr, %off; ld.global.b{bits} %{name}, [%ptr];")
    for k, inst in enumerate(insts):
        lines.append(inst)
        lines.append(f"ld.param.u64 %ptr, [p_o{k}]; mul.wide.u32 %off, %i, {out_bits // 8}; "
                     f"add.u64 %ptr, %ptr, %off; st.global.b{out_bits} [%ptr], %d;")
    params = ", ".join([f".param .u64 p_{n}" for n in names]
                       + [f".param .u64 p_o{k}" for k in range(len(insts))])
    ptx = kernel_ptx("\n".join(lines), params, target=target, version=version)
    run_ptx(ptx, "k", padded // SWEEP_BLOCK, SWEEP_BLOCK, columns + outputs)
    return [o[:count] for o in outputs]
