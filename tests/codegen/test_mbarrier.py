"""mbarrier on the CPU (ptxport/codegen/ops/mbarrier.py, yields in targets/cpu/target.py): arrivals,
phases, parity waits, arrive_drop, transaction counts, test_wait spin loops, and a phase that
never completes reported instead of hanging. tests/kernels/mbarrier_sync.cu checks the same
semantics against an H100 (benchmarks/gpu_check.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import KernelExecutionError
from ptxport.runtime.backends.cpu import warps

PARAMS = ".param .u64 px, .param .u64 pout, .param .u32 pcount"
HEAD = """
.reg .b32 %r<24>; .reg .b64 %rd<24>; .reg .pred %p<8>;
.shared .align 8 .b64 bar;
.shared .align 4 .b32 vals[128];
ld.param.u64 %rd1, [px];
ld.param.u64 %rd2, [pout];
ld.param.u32 %r20, [pcount];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ntid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r3, [%rd4];
add.s64 %rd5, %rd2, %rd3;
setp.eq.u32 %p1, %r1, 0;
@%p1 mbarrier.init.shared.b64 [bar], %r20;
bar.sync 0;
shl.b32 %r4, %r1, 2;
mov.u32 %r5, vals;
add.s32 %r6, %r5, %r4;
"""

# Every thread stores 2*x[t] in shared memory, arrives, waits for the phase with try_wait on
# the state its arrive returned, then reads its right neighbour's value: out[t] =
# 2*x[(t+1) % n] + pending count in its state (arrivals still missing when it arrived).
TRY_WAIT = kernel_ptx(HEAD + """
shl.b32 %r7, %r3, 1;
st.shared.u32 [%r6], %r7;
mbarrier.arrive.shared.b64 %rd6, [bar];
mbarrier.pending_count.b64 %r8, %rd6;
WAIT:
mbarrier.try_wait.shared.b64 %p2, [bar], %rd6;
@!%p2 bra WAIT;
add.u32 %r9, %r1, 1;
rem.u32 %r9, %r9, %r2;
shl.b32 %r10, %r9, 2;
add.s32 %r11, %r5, %r10;
ld.shared.u32 %r12, [%r11];
mul.lo.u32 %r13, %r12, 1000;
add.u32 %r13, %r13, %r8;
st.global.u32 [%rd5], %r13;
""", PARAMS)


def test_try_wait_waits_for_every_arrival():
    n = 64
    x = np.arange(n, dtype=np.uint32) + 5
    out = np.zeros(n, np.uint32)
    run_ptx(TRY_WAIT, "k", 1, n, [x, out, np.uint32(n)])
    right = np.roll(x, -1) * 2
    # threads arrive in order on the CPU: thread t leaves n - t arrivals pending (its own
    # included); any order is allowed, so only check the set
    assert sorted(out // 1000) == sorted(right)
    assert sorted(out % 1000) == list(range(1, n + 1))


# Every thread arrives and spins with test_wait until the phase completes; the last thread
# stores its value before arriving (the others, running first on the CPU, spin: they must let
# it run). Then a second phase, waited on with .parity.
SPIN = kernel_ptx(HEAD + """
sub.u32 %r10, %r2, 1;
setp.ne.u32 %p3, %r1, %r10;
@%p3 bra ARRIVE;
st.shared.u32 [vals], %r3;
ARRIVE:
mbarrier.arrive.shared.b64 %rd6, [bar];
SPIN:
mbarrier.test_wait.shared.b64 %p2, [bar], %rd6;
@!%p2 bra SPIN;
ld.shared.u32 %r7, [vals];
mbarrier.arrive.shared.b64 %rd7, [bar];
PARITY:
mbarrier.try_wait.parity.shared.b64 %p4, [bar], 1;
@!%p4 bra PARITY;
mbarrier.test_wait.parity.shared.b64 %p5, [bar], 0;
selp.u32 %r8, 1, 0, %p5;
mul.lo.u32 %r9, %r7, 10;
add.u32 %r9, %r9, %r8;
st.global.u32 [%rd5], %r9;
""", PARAMS)


def test_a_spinning_test_wait_lets_the_late_thread_arrive_and_parity_phases():
    n = 96
    x = np.arange(n, dtype=np.uint32) + 7
    out = np.zeros(n, np.uint32)
    run_ptx(SPIN, "k", 1, n, [x, out, np.uint32(n)])
    # everyone saw the last thread's value (stored before its arrive); after the second
    # phase completed, the phase of parity 0 (the third) is in progress: test_wait.parity 0
    # gives false
    np.testing.assert_array_equal(out, np.full(n, x[-1] * 10, np.uint32))


# arrive_drop: odd threads drop out after the first phase; the second phase then completes
# with the even threads' arrivals only. Transaction counts: thread 0 expects 48 bytes with its
# arrive, thread 1 completes them in two parts; the phase waits for both.
DROP_TX = kernel_ptx(HEAD + """
and.b32 %r7, %r1, 1;
setp.eq.u32 %p3, %r7, 1;
setp.eq.u32 %p4, %r1, 0;
setp.eq.u32 %p5, %r1, 1;
@%p3 mbarrier.arrive_drop.shared.b64 %rd6, [bar];
@!%p3 mbarrier.arrive.shared.b64 %rd6, [bar];
W1:
mbarrier.try_wait.shared.b64 %p2, [bar], %rd6;
@!%p2 bra W1;
@%p3 bra DONE;
@%p4 mbarrier.arrive.expect_tx.shared.b64 %rd7, [bar], 48;
@!%p4 mbarrier.arrive.shared.b64 %rd7, [bar];
W2:
mbarrier.try_wait.shared.b64 %p2, [bar], %rd7;
@!%p2 bra W2;
mov.u32 %r8, 2;
st.global.u32 [%rd5], %r8;
bra END;
DONE:
@%p5 mbarrier.complete_tx.shared.b64 [bar], 16;
@%p5 mbarrier.complete_tx.shared.b64 [bar], 32;
mov.u32 %r8, 1;
st.global.u32 [%rd5], %r8;
END:
""", PARAMS)


def test_arrive_drop_and_transaction_counts():
    n = 64
    out = np.zeros(n, np.uint32)
    run_ptx(DROP_TX, "k", 1, n, [np.zeros(n, np.uint32), out, np.uint32(n)])
    np.testing.assert_array_equal(out, np.where(np.arange(n) % 2, 1, 2).astype(np.uint32))


def test_a_phase_that_never_completes_is_reported(monkeypatch):
    monkeypatch.setattr(warps, "YIELD_ROUNDS", 50)
    n = 32
    out = np.zeros(n, np.uint32)
    with pytest.raises(KernelExecutionError, match="mbarrier whose phase never completes"):
        # one more arrival expected than there are threads
        run_ptx(TRY_WAIT, "k", 1, n, [np.zeros(n, np.uint32), out, np.uint32(n + 1)])
