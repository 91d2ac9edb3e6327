"""The worker pool's native open, run and prewake called as builtin functions
(backends/cpu/pool_calls.py): they take an int (a job's address, a count), refuse anything
else with a TypeError, and the run lets the GIL go while blocks run, as ctypes' CFUNCTYPE
did."""

import ctypes
import threading
import time
import types

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime.backends.cpu import pool as cpu_pool

# wait_flag(flag, out): looks at *flag until it is not 0, at most LIMIT times; out = how
# many times it found 0.
LIMIT = 1_000_000_000
PTX = f"""
.version 8.0
.target sm_80
.address_size 64

.visible .entry wait_flag(.param .u64 flag, .param .u64 out)
{{
  .reg .pred %p<3>; .reg .b32 %r<3>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, 0;
LOOK:
  ld.volatile.global.u32 %r2, [%rd1];
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra DONE;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p2, %r1, {LIMIT};
  @%p2 bra LOOK;
DONE:
  st.global.u32 [%rd2], %r1;
  ret;
}}
"""


@pytest.fixture(scope="module")
def dev():
    device = Device("cpu")
    device.set_current()
    return device


def test_open_run_and_prewake_are_builtins_that_check_their_argument(dev):
    pool = cpu_pool.take()
    try:
        for method in (pool._open, pool._run, pool._prewake):
            assert isinstance(method, types.BuiltinFunctionType)
            with pytest.raises(TypeError):
                method("not an address")
        assert pool._prewake(0) is None     # (0 is a value, not PyLong_AsVoidPtr's failure)
    finally:
        cpu_pool.give(pool)


def test_run_lets_the_gil_go_while_blocks_run(dev):
    """A kernel that waits for a flag set by another Python thread ends: the launching
    thread's run (the sync's) does not hold the GIL (held, the flag is set only after the
    kernel gave up waiting, LIMIT looks later)."""
    kernel = Program(PTX, code_type="ptx").compile("native").get_kernel("wait_flag")
    stream = dev.create_stream()
    flag, out = dev.allocate(4, stream=stream), dev.allocate(4, stream=stream)
    flag.fill(0, 4, stream=stream)
    stream.sync()
    word = ctypes.c_uint32.from_address(flag.handle)

    def set_flag() -> None:
        time.sleep(0.05)
        word.value = 1

    setter = threading.Thread(target=set_flag)
    # (a loop kernel of one block: queued, and run whole by the sync, on this thread)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, flag, out)
    setter.start()
    stream.sync()
    setter.join()
    looks = np.empty(1, np.uint32)
    out.copy_to(looks, stream=stream)
    stream.sync()
    assert looks[0] < LIMIT
