"""Warp gangs' f64 NaN results chosen on a branch (float_format.f64_nan with
Target.f64_nan_branch): LLVM's result is kept where no lane of it is a NaN, and the payload
PTX gives (the first NaN operand in the instruction's order, b before a, quietened; else
0xFFF8000000000000) is chosen in a block entered only where one is (thread by thread, by
selects as before). An accumulation loop (reduce_warp's `acc += x[i]`) on warp gangs and
thread by thread, bit for bit against a model: lanes that meet one NaN, two NaNs of
different payloads (x86's vaddpd would keep its first source's, not PTX's b), a signalling
NaN, inf - inf, or no NaN at all, in one warp;
a warp in which a single lane's result is a NaN (the branch must still be taken), and one
with infinities of both signs in lanes the warp's NaN test adds together (no NaN result:
the numbers must come through the exact path unchanged)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import assert_same_words, kernel_ptx, launch_on_cpu
from ptxport import LaunchConfig
from ptxport.codegen.lower import Target
from ptxport.codegen.targets.cpu.target import CpuTarget

DEFAULT_NAN = 0xFFF8_0000_0000_0000
QUIET = 1 << 51
ROWS = 6

# each lane over ROWS rows: acc = acc + x (PTX's b, x, first), dif = x - dif (b = dif first),
# prod = fma(x, y, prod) (b = y, then c = prod, then a = x)
BODY = f"""
.reg .u32 %t, %r; .reg .u64 %px, %py, %po, %off, %a; .reg .pred %more;
.reg .f64 %acc, %dif, %prod, %x, %y;
mov.u32 %t, %tid.x;
ld.param.u64 %px, [px]; ld.param.u64 %py, [py]; ld.param.u64 %po, [po];
mov.f64 %acc, 0d0000000000000000; mov.f64 %dif, 0d0000000000000000;
mov.f64 %prod, 0d0000000000000000; mov.u32 %r, 0;
LOOP:
mul.wide.u32 %off, %t, 8; add.u64 %a, %px, %off; ld.global.f64 %x, [%a];
add.u64 %a, %py, %off; ld.global.f64 %y, [%a];
add.f64 %acc, %acc, %x;
sub.f64 %dif, %x, %dif;
fma.rn.f64 %prod, %x, %y, %prod;
add.u64 %px, %px, 256; add.u64 %py, %py, 256;
add.u32 %r, %r, 1;
setp.lt.u32 %more, %r, {ROWS};
@%more bra LOOP;
mul.wide.u32 %off, %t, 8; add.u64 %a, %po, %off; st.global.f64 [%a], %acc;
add.u64 %a, %a, 256; st.global.f64 [%a], %dif;
add.u64 %a, %a, 256; st.global.f64 [%a], %prod;
"""
PTX = kernel_ptx(BODY, ".param .u64 px, .param .u64 py, .param .u64 po")


def _nan(bits: int) -> bool:
    return (bits & ~(1 << 63)) > 0x7FF0_0000_0000_0000


def _ptx(result: float, *operands: int) -> int:
    """PTX's f64 result bits: a number as computed; a NaN: the first NaN operand quietened,
    else the default NaN."""
    bits = int(np.float64(result).view(np.uint64))
    if not _nan(bits):
        return bits
    for o in operands:
        if _nan(o):
            return o | QUIET
    return DEFAULT_NAN


def _f(bits: int) -> np.float64:
    return np.uint64(bits).view(np.float64)


def _model(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros((3, 32), np.uint64)
    for lane in range(32):
        acc = dif = prod = 0
        for row in range(ROWS):
            a, b = int(x[row, lane]), int(y[row, lane])
            with np.errstate(all="ignore"):
                acc = _ptx(_f(acc) + _f(a), a, acc)
                dif = _ptx(_f(a) - _f(dif), dif, a)
                prod = _ptx(np.float64(_f(a) * _f(b) + _f(prod)) if not any(
                    map(_nan, (a, b, prod))) else np.nan, b, prod, a)
        out[:, lane] = acc, dif, prod
    return out


def _inputs(case: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    # small integers: the fma's products and sums are exact, so the model's two roundings
    # are the one fused rounding
    x = rng.integers(-8, 8, (ROWS, 32)).astype(np.float64).view(np.uint64)
    y = rng.integers(1, 8, (ROWS, 32)).astype(np.float64).view(np.uint64)
    inf, ninf = 0x7FF0_0000_0000_0000, 0xFFF0_0000_0000_0000
    if case == "one lane":
        x[3, 31] = 0x7FF0_0000_0000_0123      # one signalling NaN in the last lane
        return x, y
    if case == "infinities":
        # no NaN result, but lanes 5 and 21 (and 2 and 10) hold infinities of both signs,
        # which the test of a warp's lanes adds together: the exact path, numbers kept
        x[3, 5], x[3, 21], x[1, 2], x[1, 10] = inf, ninf, ninf, inf
        return x, y
    x[2, 1] = 0x7FF8_0000_0000_0ABC           # one quiet NaN
    x[1, 2], x[4, 2] = 0xFFF8_0000_0000_0001, 0x7FF8_0000_0000_0002   # two payloads
    x[0, 3] = 0x7FF0_0000_0000_0055           # signalling: quietened
    x[2, 4], x[3, 4] = inf, ninf              # inf - inf: the default NaN
    y[1, 5] = 0x7FF8_0000_0000_0777           # the fma's b alone
    x[2, 6], y[2, 6] = 0x7FF8_0000_0000_0006, 0xFFF8_0000_0000_0060   # a and b both NaN
    x[5, 7] = inf                             # infinite, no NaN
    return x, y


@pytest.mark.parametrize("gang", [True, False])
@pytest.mark.parametrize("case", ["mixed", "one lane", "infinities"])
def test_f64_nan_payloads_in_an_accumulation_loop(cpu_options, gang, case):
    cpu_options(gang=gang)
    x, y = _inputs(case)
    out = np.zeros((3, 32), np.uint64)
    binary = launch_on_cpu(PTX, LaunchConfig(grid=1, block=32), x, y, out)
    assert (binary.gang_refusal is None) == gang
    assert_same_words(out, _model(x, y))


def test_only_the_cpu_target_branches():
    """GPU targets keep the selects (a branch on a lane's NaN would diverge their warps)."""
    assert CpuTarget.f64_nan_branch and not Target.f64_nan_branch
