"""Warp gangs' registers: a PTX register is a vector of the warp's 32 lanes (or one scalar where
every lane holds the same value), and GangBuilder makes the shared lowerings' scalar-minded
IRBuilder calls work on such vectors, refusing (GangUnsupported) what it cannot.
"""

from __future__ import annotations

import itertools

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I32,
)

W = 32
EXIT_PC = 0x7FFFFFFF
# What the gang function returns besides -1 (every lane exited) and cpu.FAULTED.
BARRIER = 1
# ... or WHOLE_AT + the segment where it resumes, when all 32 lanes wait at one barrier; or
# CONTINUE, in a uniform round (rounds.py), where its lanes took ways it leaves to the
# dispatcher (its state is in its frame: the general round's call resumes it at once).
CONTINUE, WHOLE_AT = 2, 3
# The gang function's point argument in a block's first round (rounds.py: fresh warps): no
# uniform round's segment, but the warp leaves the round at the dispatcher (CONTINUE) as in
# a uniform round, so that the round's copy of it is the straight path from the start
# (where the kernel has barriers or yields: only there has its frame the registers a
# leaving warp keeps, lowering.py).
FIRST_ROUND = -2
# ... or, where the warp yielded at a loop's back edge (interleave.py), one of those
# (BARRIER or WHOLE_AT + the segment) with this bit set: the round loop resumes the warps
# that yielded before any that waits at a barrier.
YIELDED = 1 << 24
# ... or, in a uniform round, WHOLE_AT + the segment with this bit set: every later warp
# would run what this one ran and wait where it waits (idle_warps.py).
SKIP_REST = 1 << 23
DEADLOCK = -(1 << 25)       # lanes wait at a warp operation for members that never come
NOT_MEMBER = -(1 << 25) - 1  # a lane executes a warp operation whose mask does not name it
# The warp frame: run_blocks' status word, the parked lanes, where the warp resumes when all
# its live lanes wait at one barrier (else -1) and those lanes, the lanes that wait at a
# barrier the others have not reached (CONTINUE), the lanes' counters, the registers that
# live across resume points.
STATUS, PARKED, RESUME, RESUME_LANES, AT_BARRIER, PC, REGISTERS = 0, 4, 8, 12, 16, 128, 256
# ... and the passes left before the warp's next yield (interleave.py, where K > 1).
YIELD_COUNT = 20
# Where a fault leaves the faulting lane (the block context's scratch area).
SCRATCH_LANE = 128
# The gang function's argument that points to run_blocks' copy of the block context's fields
# (state.py's GangTarget.ctx_field reads them there).
BLOCK_COPY = 6
# The block's verdict (block_tests.py), a byte of that copy zeroed as each block starts:
# in the context's scratch area, which the copy never holds (no ctx_field reads it).
VERDICT = SCRATCH_LANE + 8
# ... and the run_blocks call's verdict (block_tests.py's call test), zeroed as each call
# starts, then its first block's number and its count of blocks (u64 each), the grid's
# %nctaid.x and .y (u32 each)
CALL_VERDICT = VERDICT + 1
CALL_BLOCKS = VERDICT + 8

FULL = (1 << W) - 1


class GangUnsupported(Exception):
    """Something the gang path does not lower: the kernel runs on the scalar path."""


class _Lanes(ll.VectorType):
    """A register of the warp's lanes: answers what the scalar-minded lowerings ask of a
    type (`.width`, calling it for a constant) as its element type would, for all lanes."""

    is_lanes = True

    @property
    def width(self) -> int:
        return self.element.width

    @property
    def intrinsic_name(self) -> str:
        return f"v{self.count}{self.element.intrinsic_name}"

    def __call__(self, value):
        return _splat_const(ll.Constant(self.element, value), self)


def vec(t: ll.Type) -> ll.VectorType:
    if isinstance(t, ll.VectorType):
        raise GangUnsupported("packed (vector) PTX types")
    return _Lanes(t, W)


def is_vec(v) -> bool:
    return isinstance(v.type, ll.VectorType)


def _splat_const(c: ll.Constant, vt: ll.VectorType) -> ll.Constant:
    # (one constant per type and text, which llvmlite then formats once: the text, not the
    # value, so that 0.0 and -0.0, equal in Python, stay apart; the classes, so that a
    # _Lanes splat stays one)
    key = (type(vt), str(vt), type(c), str(c))
    splat = _SPLATS.get(key)
    if splat is None:
        if len(_SPLATS) >= 4096:
            _SPLATS.clear()
        splat = _SPLATS[key] = ll.Constant(vt, [c] * W)
    return splat


_SPLATS: dict[tuple, ll.Constant] = {}


# splat's shuffle mask (lane 0 to every lane): one constant for every splat, which llvmlite
# formats once (building and formatting its 32 elements at each splat, and each constant's
# splat, were ~15% of a gang lowering and its text)
_LANE_0 = ll.Constant(ll.VectorType(I32, W), [0] * W)


_SCALAR_NAMES = {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"}


_SERIALS = itertools.count()


class GangBuilder(ll.IRBuilder):
    """An IRBuilder that lets the shared (scalar-minded) lowerings of ops/ compute on vectors:
    a scalar operand next to a vector is splat to all lanes, casts of vectors cast to vectors,
    and LLVM intrinsics are called in their vector forms. What cannot work lane by lane (a
    branch on a vector condition, a call of a runtime helper) raises GangUnsupported."""

    def splat(self, v: ll.Value, vt: ll.VectorType | None = None) -> ll.Value:
        if is_vec(v):
            return v
        vt = vt or vec(v.type)
        if isinstance(v, ll.Constant):
            return _splat_const(v, vt)
        one = ll.IRBuilder.insert_element(self, ll.Constant(vt, None), v, I32(0))
        return ll.IRBuilder.shuffle_vector(self, one, ll.Constant(vt, None), _LANE_0)

    def _insert(self, instr):
        # vectors of the warp's lanes answer as _Lanes, whichever instruction made them
        t = getattr(instr, "type", None)
        if isinstance(t, ll.VectorType) and not isinstance(t, _Lanes) and t.count == W:
            instr.type = _Lanes(t.element, W)
        instr.serial = next(_SERIALS)     # (the order made in: GangLowering.written)
        super()._insert(instr)

    def match(self, *values):
        if not any(is_vec(v) for v in values):
            return values
        return tuple(self.splat(v) for v in values)


def binary(name):
    base = getattr(ll.IRBuilder, name)

    def method(self, lhs, rhs, *args, **kwargs):
        lhs, rhs = self.match(lhs, rhs)
        return base(self, lhs, rhs, *args, **kwargs)
    return method


def _compare(name):
    base = getattr(ll.IRBuilder, name)

    def method(self, op, lhs, rhs, *args, **kwargs):
        lhs, rhs = self.match(lhs, rhs)
        return base(self, op, lhs, rhs, *args, **kwargs)
    return method


def _cast(name):
    base = getattr(ll.IRBuilder, name)

    def method(self, value, typ, *args, **kwargs):
        if is_vec(value) and not isinstance(typ, ll.VectorType):
            typ = vec(typ)
        elif not is_vec(value) and isinstance(typ, ll.VectorType):
            return self.splat(base(self, value, typ.element, *args, **kwargs), typ)
        return base(self, value, typ, *args, **kwargs)
    return method


for _name in ("add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "and_", "or_", "xor", "shl",
              "lshr", "ashr", "fadd", "fsub", "fmul", "fdiv", "frem"):
    setattr(GangBuilder, _name, binary(_name))
for _name in ("icmp_signed", "icmp_unsigned", "fcmp_ordered", "fcmp_unordered"):
    setattr(GangBuilder, _name, _compare(_name))
for _name in ("trunc", "zext", "sext", "fptrunc", "fpext", "fptosi", "fptoui", "sitofp",
              "uitofp", "bitcast", "ptrtoint", "inttoptr"):
    setattr(GangBuilder, _name, _cast(_name))


def _select(self, cond, lhs, rhs, *args, **kwargs):
    if is_vec(lhs) or is_vec(rhs) or is_vec(cond):
        lhs, rhs = self.match(lhs, rhs)
        if not is_vec(lhs):
            lhs, rhs = self.splat(lhs), self.splat(rhs)
    return ll.IRBuilder.select(self, cond, lhs, rhs, *args, **kwargs)


def _cbranch(self, cond, *args, **kwargs):
    if is_vec(cond):
        raise GangUnsupported("a lowering that branches on a lane's value")
    return ll.IRBuilder.cbranch(self, cond, *args, **kwargs)


def _call(self, fn, args, *rest, **kwargs):
    if not any(is_vec(a) for a in args):
        return ll.IRBuilder.call(self, fn, args, *rest, **kwargs)
    name = fn.name
    if not name.startswith("llvm.") or isinstance(fn.function_type.return_type,
                                                     ll.LiteralStructType):
        raise GangUnsupported(f"a call of {name} on lanes")
    vectors = []
    for a, t in zip(args, fn.function_type.args, strict=True):
        # flags (i1 is_zero_poison ...) stay scalar where the intrinsic wants a scalar
        vectors.append(a if (not is_vec(a) and isinstance(t, ll.IntType) and t.width == 1
                             and isinstance(a, ll.Constant)) else self.splat(a))
    parts = [f"v{W}{p}" if p in _SCALAR_NAMES else p for p in name.split(".")]
    vname = ".".join(parts)
    ret = fn.function_type.return_type
    vret = ret if isinstance(ret, ll.VoidType) else vec(ret)
    module = self.module
    vfn = module.globals.get(vname)
    if vfn is None:
        vfn = ll.Function(module, ll.FunctionType(vret, [v.type for v in vectors]), name=vname)
    return ll.IRBuilder.call(self, vfn, vectors, *rest, **kwargs)


def _refuse(what):
    def method(self, *args, **kwargs):
        raise GangUnsupported(what)
    return method


GangBuilder.select = _select
GangBuilder.cbranch = _cbranch
GangBuilder.call = _call
GangBuilder.switch = _refuse("a switch inside a lowering")
GangBuilder.phi = _refuse("control flow inside a lowering")


def _lane_intrinsic(name):
    """llvmlite's helpers for ctpop, fma, ... as the vector intrinsics."""
    base = getattr(ll.IRBuilder, name)
    llvm_name = {"ctpop": "ctpop", "ctlz": "ctlz", "cttz": "cttz", "bitreverse": "bitreverse",
                 "bswap": "bswap", "fma": "fma"}[name]

    def method(self, *args, **kwargs):
        if not any(is_vec(a) for a in args if isinstance(a, ll.Value)):
            return base(self, *args, **kwargs)
        values = [self.splat(a) for a in args if not (isinstance(a, ll.Constant)
                                                      and a.type == I1)]
        flags = [a for a in args if isinstance(a, ll.Constant) and a.type == I1]
        vt = values[0].type
        fn = declare(self.module, f"llvm.{llvm_name}.{vt.intrinsic_name}", vt,
                      [v.type for v in values] + [I1] * len(flags))
        return ll.IRBuilder.call(self, fn, values + flags)
    return method


for _name in ("ctpop", "ctlz", "cttz", "bitreverse", "bswap", "fma"):
    setattr(GangBuilder, _name, _lane_intrinsic(_name))
for _name in ("convert_from_fp16", "convert_to_fp16"):
    setattr(GangBuilder, _name, _refuse(f"{_name} on lanes"))


def declare(llmod, name, ret, args):
    existing = llmod.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(llmod, ll.FunctionType(ret, args), name)
