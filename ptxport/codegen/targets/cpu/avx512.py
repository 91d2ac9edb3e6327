"""AVX-512 instructions that the shared lowerings (codegen/ops/) ask the CPU target for, on a
warp's lanes (<32 x float>, two 16-lane halves). Values alike in every lane (scalars) are
left to the shared code: the thread-by-thread path's loops over a block's threads are
vectorised by LLVM, which cannot widen an x86 intrinsic.

- f32 add, sub, mul and fma rounded toward zero or either infinity (PTX's .rz .rm .rp) with
  the rounding mode in the instruction (EVEX static rounding, exceptions suppressed): one
  instruction per 16 lanes, where ops/float_arith.py computes the exact result in f64 and
  rounds it (some sixty). nvcc's expf has one fma.rm.f32 per call (the integer part of
  x * log2 e, rounded down): a softmax spent much of its time there. AVX-512 gives IEEE
  754's results in these modes, which are PTX's for f32 without .ftz: exact zeros' signs,
  subnormals and overflow included (a NaN is some NaN; the lowering makes it canonical).
- p * 2**k for an integral float k (vscalefps): ex2.approx.f32's last step, rounded once
  as llvm.ldexp is, without converting k to an integer and back; a NaN k gives a NaN.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I16, I32, FunctionLowering, declare
from ptxport.codegen.ops.float_format import F32_LL

__all__ = ["rounded_f32", "scaled_f32"]

# _MM_FROUND_TO_NEG_INF, _TO_POS_INF, _TO_ZERO, each | _MM_FROUND_NO_EXC; the current mode
_ROUNDING = {"rm": 9, "rp": 10, "rz": 11}
_CURRENT = 4
_ARITHMETIC = {"add": "llvm.x86.avx512.add.ps.512", "sub": "llvm.x86.avx512.sub.ps.512",
               "mul": "llvm.x86.avx512.mul.ps.512", "fma": "llvm.x86.avx512.vfmadd.ps.512"}
_HALF = 16
_V16 = ll.VectorType(F32_LL, _HALF)


def _lanes_type(xs: list) -> ll.VectorType | None:
    """The type of the warp's f32 lanes among `xs`, or None (all scalars, or other lanes)."""
    lanes = [x.type for x in xs if getattr(x.type, "is_lanes", False)]
    if not lanes or lanes[0].element != F32_LL or lanes[0].count != 2 * _HALF:
        return None
    return lanes[0]


def _by_halves(fl: FunctionLowering, name: str, xs: list, extra: list) -> ll.Value:
    """The intrinsic `name` of 16-lane vectors (then the scalar arguments `extra`) on each
    half of the lanes `xs` (scalars splat), the halves joined again."""
    b = fl.b
    lanes = _lanes_type(xs)
    xs = [b.splat(x, lanes) for x in xs]
    fn = declare(fl.llfn.module, name, _V16, [_V16] * len(xs) + [e.type for e in extra])
    halves = []
    for start in (0, _HALF):
        mask = ll.Constant(ll.VectorType(I32, _HALF), list(range(start, start + _HALF)))
        parts = [ll.IRBuilder.shuffle_vector(b, x, ll.Constant(x.type, None), mask) for x in xs]
        # (IRBuilder's call: the gang builder would call the intrinsic in a 32-lane form)
        halves.append(ll.IRBuilder.call(b, fn, [*parts, *extra]))
    whole = ll.Constant(ll.VectorType(I32, 2 * _HALF), list(range(2 * _HALF)))
    return ll.IRBuilder.shuffle_vector(b, halves[0], halves[1], whole)


def rounded_f32(fl: FunctionLowering, op: str, xs: list, rnd: str) -> ll.Value | None:
    """op (add sub mul fma) on f32 lanes rounded once in mode rnd (rz rm rp), or None."""
    if _lanes_type(xs) is None or op not in _ARITHMETIC or rnd not in _ROUNDING:
        return None
    return _by_halves(fl, _ARITHMETIC[op], xs, [ll.Constant(I32, _ROUNDING[rnd])])


def scaled_f32(fl: FunctionLowering, p: ll.Value, k: ll.Value) -> ll.Value | None:
    """p * 2**k on f32 lanes (k integral or NaN), rounded once to nearest, or None."""
    if _lanes_type([p, k]) is None:
        return None
    passthrough = ll.Constant(F32_LL, 0.0)
    return _by_halves(fl, "llvm.x86.avx512.mask.scalef.ps.512", [p, k, passthrough],
                      [ll.Constant(I16, -1), ll.Constant(I32, _CURRENT)])
