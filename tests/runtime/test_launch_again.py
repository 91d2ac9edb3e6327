"""A launch like the last one of its kernel (launch.py's _again): the same device, thread,
configuration and arguments (the same open Buffers, numpy scalars of the same class and
bytes), the stream idle with no error kept, skips the checks and packing (buffers
allocated or freed since do not matter); anything else takes the full path, with its
results and errors."""

import gc
import threading
import time

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import ArgumentError, IllegalAddressError, KernelTrapError
from ptxport.runtime.backends.cpu import executor as cpu_executor

launch_module = __import__("ptxport.runtime.launch", fromlist=["_again"])

# count(out, add, bad): each thread of block k adds `add` to out[k]; block `bad` then traps.
PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry count(.param .u64 out, .param .u32 add, .param .u32 bad)
{
  .reg .pred %p<2>; .reg .b32 %r<5>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r4, [add];
  ld.param.u32 %r3, [bad];
  mov.u32 %r1, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  atom.global.add.u32 %r2, [%rd3], %r4;
  setp.eq.u32 %p1, %r1, %r3;
  @%p1 trap;
  ret;
}

"""

BLOCKS, BLOCK = 64, 32
NONE = np.uint32(1 << 30)       # (no block traps)


@pytest.fixture(scope="module")
def dev():
    return Device("cpu")


@pytest.fixture(scope="module")
def code(dev):
    return Program(PTX, code_type="ptx").compile("native")


# (small: launch() runs its grid at once on the launching thread; large: its blocks begin
# early on the worker pool's threads, and the sync finishes it)
@pytest.fixture(params=[(BLOCKS, 1), (BLOCKS, 2), (4096, 2)], ids=["small-w1", "small-w2",
                                                                 "early-w2"])
def shape(request):
    grid, workers = request.param
    cpu_executor.set_workers(workers)
    yield LaunchConfig(grid=grid, block=BLOCK)
    cpu_executor.set_workers(None)


@pytest.fixture
def paths(monkeypatch):
    """'again' or 'full' for each launch that got as far as queueing. (Earlier tests'
    buffers are collected first, and their frees given time to run on their streams'
    threads; the collector stays off during the test, so that no finalizer runs in it.)"""
    gc.collect()
    time.sleep(0.02)
    gc.disable()
    taken, again, remember = [], launch_module._again, launch_module._remember

    def spy_again(*args):
        done = again(*args)
        if done:
            taken.append("again")
        return done

    def spy_remember(*args):
        taken.append("full")
        return remember(*args)

    monkeypatch.setattr(launch_module, "_again", spy_again)
    monkeypatch.setattr(launch_module, "_remember", spy_remember)
    yield taken
    gc.enable()


def _counts(out, stream, blocks) -> np.ndarray:
    host = np.empty(out.size // 4, np.uint32)
    out.copy_to(host, stream=stream)
    stream.sync()
    return host[:blocks]


def _gate(stream) -> threading.Event:
    """Keep `stream` busy until the event is set (work queued that waits for it)."""
    gate = threading.Event()
    stream._submit(gate.wait, skippable=False, what="a gate")
    return gate


def _fresh(dev, stream, blocks):
    out = dev.allocate(blocks * 4, stream=stream)
    out.fill(0, 4, stream=stream)
    stream.sync()
    return out


def test_the_same_launch_again_skips_the_checks(dev, code, shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out, one = _fresh(dev, stream, blocks), np.uint32(1)
    for _ in range(3):
        launch(stream, shape, kernel, out, one, NONE)
        stream.sync()
    # (scalars made anew with the same class and value, and an equal configuration)
    for _ in range(2):
        launch(stream, LaunchConfig(grid=shape.grid, block=BLOCK), kernel, out,
               np.uint32(1), np.uint32(1 << 30))
        stream.sync()
    assert paths == ["full", "again", "again", "again", "again"]
    assert (_counts(out, stream, blocks) == 5 * BLOCK).all()


def test_other_values_configurations_and_scalar_classes_take_the_full_path(dev, code,
                                                                            shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out = _fresh(dev, stream, blocks)
    launch(stream, shape, kernel, out, np.uint32(1), NONE)
    launch(stream, shape, kernel, out, np.uint32(2), NONE)          # another value
    launch(stream, shape, kernel, out, np.int32(2), NONE)           # another class
    launch(stream, LaunchConfig(grid=blocks // 2, block=BLOCK), kernel, out, np.int32(2),
           NONE)                                                    # another grid
    launch(stream, shape, kernel, out, np.int32(2), np.array(1 << 30, np.uint32))  # a 0-d
    launch(stream, shape, kernel, out, np.int32(2), np.array(1 << 30, np.uint32))  # array
    stream.sync()
    assert paths == ["full"] * 6
    expected = np.full(blocks, 1 + 2 + 2 + 2 + 2, np.uint32)
    expected[:blocks // 2] += 2
    assert (_counts(out, stream, blocks) == expected * BLOCK).all()


def test_allocations_made_or_freed_since_keep_the_fast_path(dev, code, shape, paths):
    """Other buffers allocated or freed between launches (a program's temporaries) do not
    send a launch like the last one down the full path: the backend reads the live
    allocations at each launch for the access checks."""
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out, one = _fresh(dev, stream, blocks), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    other = dev.allocate(64, stream=stream)      # a new allocation
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    other.close()                                # a buffer freed
    stream.sync()
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    assert paths == ["full", "again", "again"]
    assert (_counts(out, stream, blocks) == 3 * BLOCK).all()


def test_a_packed_launch_again_on_freed_memory_faults(dev, code, shape, paths, monkeypatch):
    """launch_packed's bytes hold a raw address: after its buffer was freed, the same bytes
    again take the fast path and the kernel's store there faults, as on the full path (the
    access checks read the allocations live now; nothing is allocated after the free, so
    no live allocation covers the address)."""
    taken, again = [], launch_module._again_packed

    def spy(*args):
        taken.append(again(*args))
        return taken[-1]

    monkeypatch.setattr(launch_module, "_again_packed", spy)
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out = _fresh(dev, stream, blocks)
    params = _packed(out, 1, 1 << 30)
    for _ in range(2):
        launch_module.launch_packed(stream, shape, kernel, params)
        stream.sync()
    assert (_counts(out, stream, blocks) == 2 * BLOCK).all()
    out.close(stream=stream)
    stream.sync()
    launch_module.launch_packed(stream, shape, kernel, params)
    with pytest.raises(IllegalAddressError, match="outside every allocation"):
        stream.sync()
    assert taken[-2:] == [True, True]   # (the second launch and the one after the free)


def test_a_closed_buffer_is_refused_as_before(dev, code, shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    out, one = _fresh(dev, stream, shape.grid[0]), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    out.close(stream=stream)
    with pytest.raises(ArgumentError, match=r"kernel count, argument 0 .*the buffer is closed"):
        launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    assert paths == ["full"]


def test_a_buffer_closed_whose_free_waits_is_refused_as_before(dev, code, shape, paths):
    """A Buffer closed on a busy stream: its free waits there (the allocations unchanged),
    and a launch passing it on another stream is still refused."""
    stream, busy, kernel = dev.create_stream(), dev.create_stream(), code.get_kernel("count")
    out, one = _fresh(dev, stream, shape.grid[0]), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    gate = _gate(busy)
    try:
        out.close(stream=busy)
        with pytest.raises(ArgumentError, match=r"kernel count, argument 0 .*the buffer is "
                                                r"closed"):
            launch(stream, shape, kernel, out, one, NONE)
    finally:
        gate.set()
    busy.sync()
    stream.sync()
    assert paths == ["full"]


def test_wrong_arguments_raise_the_same_errors(dev, code, shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    out, one = _fresh(dev, stream, shape.grid[0]), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    with pytest.raises(ArgumentError, match=r"argument 1 \(add: .u32, 4 bytes\): got a Python "
                                            r"int"):
        launch(stream, shape, kernel, out, 1, NONE)
    with pytest.raises(ArgumentError, match=r"argument 1 .*got float64 of 8 bytes"):
        launch(stream, shape, kernel, out, np.float64(1), NONE)
    with pytest.raises(ArgumentError, match="takes 3 argument"):
        launch(stream, shape, kernel, out, one)
    with pytest.raises(ArgumentError, match="argument 2 .* is a value, not a pointer"):
        launch(stream, shape, kernel, out, one, out)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    assert paths == ["full", "again"]
    assert (_counts(out, stream, shape.grid[0]) == 2 * BLOCK).all()


def test_a_kept_error_takes_the_full_path_and_skips_the_launch(dev, code, shape, paths):
    """A launch like the last one after another launch failed is queued and skipped, and
    the sync raises the failure, as without the fast path."""
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out, one = _fresh(dev, stream, blocks), np.uint32(1)
    trap = Program(PTX, code_type="ptx").compile("native").get_kernel("count")
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    launch(stream, shape, trap, out, one, np.uint32(3))     # (another kernel's memo)
    launch(stream, shape, kernel, out, one, NONE)
    with pytest.raises(KernelTrapError, match=r"block \(3, 0, 0\)"):
        stream.sync()
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    assert paths == ["full", "full", "full", "again"]
    # (the trapping block's threads up to the trap added theirs; the launch after it was
    # skipped, or the trapping block would count more than 3 * BLOCK)
    counts = _counts(out, stream, blocks)
    assert 2 * BLOCK < counts[3] <= 3 * BLOCK
    assert ((2 * BLOCK <= counts) & (counts <= 3 * BLOCK)).all()


def test_a_busy_stream_takes_the_full_path_in_order(dev, code, shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out, one = _fresh(dev, stream, blocks), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    host = np.empty(out.size // 4, np.uint32)
    gate = _gate(stream)
    try:
        out.copy_to(host, stream=stream)        # (before the launch, in stream order)
        launch(stream, shape, kernel, out, one, NONE)
    finally:
        gate.set()
    stream.sync()
    assert paths == ["full", "full"]
    assert (host[:blocks] == BLOCK).all()
    assert (_counts(out, stream, blocks) == 2 * BLOCK).all()


def test_another_threads_launch_takes_the_full_path(dev, code, shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out, one = _fresh(dev, stream, blocks), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    thread = threading.Thread(target=launch, args=(stream, shape, kernel, out, one, NONE))
    thread.start()
    thread.join()
    stream.sync()
    launch(stream, shape, kernel, out, one, NONE)     # (like the other thread's: full)
    stream.sync()
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    assert paths == ["full", "full", "full", "again"]
    assert (_counts(out, stream, blocks) == 4 * BLOCK).all()


def test_another_module_of_the_same_code_takes_the_full_path(dev, code, shape, paths):
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out, one = _fresh(dev, stream, blocks), np.uint32(1)
    launch(stream, shape, kernel, out, one, NONE)
    stream.sync()
    again = Program(PTX, code_type="ptx").compile("native").get_kernel("count")
    launch(stream, shape, again, out, one, NONE)
    stream.sync()
    assert paths == ["full", "full"]
    assert (_counts(out, stream, blocks) == 2 * BLOCK).all()


# -- launch_packed (ptxport.compat's and the Triton front end's launches) -------------------

def _packed(out, add, bad) -> bytes:
    return (int(out.handle).to_bytes(8, "little") + int(add).to_bytes(4, "little")
            + int(bad).to_bytes(4, "little"))


def test_packed_launches_compare_their_bytes(dev, code, shape, paths, monkeypatch):
    taken, remember = [], launch_module._remember

    def spy_remember(*args):
        taken.append(args[3])       # (launch_packed's `now`)
        return remember(*args)

    monkeypatch.setattr(launch_module, "_remember", spy_remember)
    stream, kernel = dev.create_stream(), code.get_kernel("count")
    blocks = shape.grid[0]
    out = _fresh(dev, stream, blocks)
    for add, now in ((1, False), (1, False), (2, False), (2, True), (2, True), (2, False)):
        # (the bytes made anew each time: equal bytes suffice)
        launch_module.launch_packed(stream, shape, kernel, _packed(out, add, 1 << 30),
                                    keep=(out,), now=now)
        stream.sync()
    assert taken == [False, False, True, False]     # (the full paths; the others again)
    assert (_counts(out, stream, blocks) == 10 * BLOCK).all()


def test_compat_launches_of_an_unloaded_module_are_refused(dev, monkeypatch):
    """ptxport.compat's cuLaunchKernel on the same function again, then after its module
    was unloaded: refused by handle, as before."""
    import ctypes

    from ptxport.compat import driver, execution, memory
    from ptxport.compat.state import CudaError, state

    monkeypatch.setattr(state, "_devices", [dev])
    gc.collect()
    taken, again = [], launch_module._again_packed

    def spy(*args):
        taken.append(again(*args))
        return taken[-1]

    monkeypatch.setattr(launch_module, "_again_packed", spy)
    image = ctypes.create_string_buffer(PTX.encode())
    module, function, out = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint64()
    assert execution.cuModuleLoadData(ctypes.addressof(module), ctypes.addressof(image)) == 0
    name = ctypes.create_string_buffer(b"count")
    assert execution.cuModuleGetFunction(ctypes.addressof(function), module.value,
                                         ctypes.addressof(name)) == 0
    assert memory.cuMemAlloc_v2(ctypes.addressof(out), 4 * BLOCKS) == 0
    try:
        memory.cuMemsetD32_v2(out.value, 0, BLOCKS)
        values = (ctypes.c_uint64(out.value), ctypes.c_uint32(1), ctypes.c_uint32(1 << 30))
        pointers = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in values))
        for _ in range(3):
            assert execution.cuLaunchKernel(function.value, BLOCKS, 1, 1, BLOCK, 1, 1, 0, 0,
                                            ctypes.addressof(pointers), 0) == 0
            assert driver.cuCtxSynchronize() == 0
        assert taken[-2:] == [True, True]
        host = (ctypes.c_uint32 * BLOCKS)()
        assert memory.cuMemcpyDtoH_v2(ctypes.addressof(host), out.value, 4 * BLOCKS) == 0
        assert list(host) == [3 * BLOCK] * BLOCKS
        assert execution.cuModuleUnload(module.value) == 0
        with pytest.raises(CudaError) as refused:
            execution.cuLaunchKernel(function.value, BLOCKS, 1, 1, BLOCK, 1, 1, 0, 0,
                                     ctypes.addressof(pointers), 0)
        assert refused.value.code == 400        # CUDA_ERROR_INVALID_HANDLE
    finally:
        memory.cuMemFree_v2(out.value)
