"""Warp gangs' streaming accesses: global accesses at `p[blockIdx.x * blockDim.x +
threadIdx.x]` (p alike for the whole launch, the index written once outside loops, blocks of
one row: vector_add's), whose lanes, warps and blocks walk memory in order, one warp's
elements right after the previous warp's. The hardware's prefetchers fetch such a stream
ahead by themselves, so they get no software prefetch (checks.prefetch: about 18
instructions and two stores a site, which learn a stride of one warp's span here). Accesses
that move by a stride of their own (a grid-stride loop's, a tile's rows) keep it.

The index's form is found from the registers' one writes: an affine combination of
%tid.x and %ctaid.x with constant coefficients plus a part alike in every thread (kernel
parameters and constants). Widening conversions count as the value itself: this only
decides whether to prefetch, never what is accessed.
"""

from __future__ import annotations

from typing import NamedTuple

from ptxport.codegen.targets.cpu.gang.checks import Place
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, state_space
from ptxport.ptx.ast import IntImm


class _Affine(NamedTuple):
    """tid * `tid` + ctaid * `cta` + a part alike in every thread: `known`, its value where
    known (a constant), else None."""

    tid: int
    cta: int
    known: int | None


_UNKNOWN = None
_SPECIAL = {"%tid": "tid", "%ctaid": "cta"}


def streaming(fl: GangLowering, place: Place, size: int) -> bool:
    """Whether the global access of `size` bytes a lane at `place` is a stream as the
    module's docstring says: its base's lanes one element apart (tid's coefficient), and
    blocks one block's elements apart (ctaid's), for blocks of one row."""
    if place.shared or not isinstance(place.key[0], int):
        return False
    base = _base_register(fl, place)
    if base is None or fl.block[1] != 1 or fl.block[2] != 1:
        return False
    memo = fl.streams
    if id(base) not in memo:
        memo[id(base)] = _form(fl, base, set())
    form = memo[id(base)]
    return form is not None and form.tid == size and form.cta == size * fl.block[0]


def _base_register(fl: GangLowering, place: Place):
    writes = _writes(fl)
    return writes.get(("register", place.key[0]), (None,))[0]


def _writes(fl: GangLowering) -> dict:
    """id(register) -> [its writes] (and ("register", id) -> (register,)), once per kernel;
    registers written in a loop or by a guarded instruction get no entry."""
    table = fl.streams.get("writes")
    if table is not None:
        return table
    kernel = fl.function
    looping = _looping_blocks(kernel)
    table = {}
    for block in kernel.blocks:
        for inst in block.instructions:
            for register in may_write(inst):
                table.setdefault(id(register), []).append(
                    None if id(block) in looping or inst.guard is not None else inst)
                table[("register", id(register))] = (register,)
    fl.streams["writes"] = table
    return table


def _looping_blocks(kernel: ir.Function) -> set:
    """ids of the blocks that lie on a cycle of the control-flow graph."""
    looping = set()
    for block in kernel.blocks:
        seen, todo = set(), list(block.successors)
        while todo:
            b = todo.pop()
            if b is block:
                looping.add(id(block))
                break
            if id(b) not in seen:
                seen.add(id(b))
                todo.extend(b.successors)
    return looping


def _form(fl: GangLowering, register, visiting: set) -> _Affine | None:
    """The affine form of a register written once outside loops, else None."""
    if id(register) in visiting:
        return None
    writes = _writes(fl).get(id(register))
    if not writes or len(writes) != 1 or writes[0] is None:
        return None
    visiting.add(id(register))
    try:
        return _written(fl, writes[0], visiting)
    finally:
        visiting.discard(id(register))


def _operand(fl: GangLowering, value, visiting: set) -> _Affine | None:
    if isinstance(value, IntImm):
        return _Affine(0, 0, value.value)
    if isinstance(value, ir.SpecialRegister):
        axis = "xyz".index(value.component or "x") if value.component in (None, "x", "y",
                                                                            "z") else None
        if value.name == "%ntid" and axis is not None:
            return _Affine(0, 0, fl.block[axis])
        if value.name in _SPECIAL and axis == 0:
            return _Affine(int(value.name == "%tid"), int(value.name == "%ctaid"), 0)
        if value.name == "%tid" and axis is not None and fl.block[axis] == 1:
            return _Affine(0, 0, 0)
        return None
    if isinstance(value, ir.Register):
        return _form(fl, value, visiting)
    return None


def _written(fl: GangLowering, inst: ir.Instruction, visiting: set) -> _Affine | None:
    """The affine form of what `inst` writes (its first operand), where its opcode keeps
    one."""
    op = inst.opcode
    if op == "ld":
        return _Affine(0, 0, _UNKNOWN) if state_space(inst) == "param" else None
    types = inst.spec.types
    if not types or any(t[0] not in "usb" for t in types) or inst.spec.get("cc") \
            or inst.spec.get("sat") or inst.spec.get("mode", "lo") not in ("lo", "wide"):
        return None
    args = [_operand(fl, v, visiting) for v in inst.operands[1:]]
    if any(a is None for a in args):
        return None
    if op in ("mov", "cvta", "cvt") and len(args) == 1:
        return args[0]
    if op == "add" and len(args) == 2:
        return _add(args[0], args[1])
    if op == "sub" and len(args) == 2:
        return _add(args[0], _scale(args[1], -1))
    if op == "mul" and len(args) == 2:
        return _product(args[0], args[1])
    if op == "shl" and len(args) == 2 and args[1].known is not None and not args[1].tid \
            and not args[1].cta:
        return _scale(args[0], 1 << args[1].known)
    if op == "mad" and len(args) == 3:
        product = _product(args[0], args[1])
        return None if product is None else _add(product, args[2])
    return None


def _add(a: _Affine, b: _Affine) -> _Affine:
    known = None if a.known is None or b.known is None else a.known + b.known
    return _Affine(a.tid + b.tid, a.cta + b.cta, known)


def _scale(a: _Affine, k: int) -> _Affine:
    return _Affine(a.tid * k, a.cta * k, None if a.known is None else a.known * k)


def _product(a: _Affine, b: _Affine) -> _Affine | None:
    for x, y in ((a, b), (b, a)):
        if not x.tid and not x.cta and x.known is not None:
            return _scale(y, x.known)
    if not a.tid and not a.cta and not b.tid and not b.cta:
        return _Affine(0, 0, _UNKNOWN)
    return None
