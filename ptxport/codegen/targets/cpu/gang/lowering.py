"""The CPU target's warp-gang code: the 32 lanes of a warp run together in vector registers.

DESIGN.md's second design for executing a block ("a warp-gang vectoriser"). A PTX register
becomes a vector of 32 lanes (`<32 x T>`), or one scalar where every lane holds the same value
(cpu_uniform.py finds those); an instruction computes all lanes at once. A lane that is not
executing keeps its old value where another lane may read it later (the write is a `select`
on the *execution mask*). Memory accesses find out at run time how the active lanes'
addresses lie (consecutive, a CUDA warp's coalesced access: one masked vector load or store;
consecutive per half warp, a 16-wide block: two; one address per half warp: two scalar
loads; else a gather or scatter), once per base register in a segment. The accesses from one
base in a segment are checked as one range per warp against the launch's allocations (the
per-site cache of cpu.py); an access outside them stops the kernel with the first bad lane's
address, as on the scalar path. The code is made for one block shape (thread indices are
constants), and each segment twice: for a full mask (a constant) and for any other.

Control flow is general (any CFG, divergent or not) by *min-PC scheduling*: every lane has a
program counter (the number of the code segment it runs next); the warp runs the segment with
the lowest counter among its waiting lanes, with the lanes at that segment as the mask. Blocks
are numbered in program order, so lanes that leave a loop wait at a higher number until the
others have finished it, and lanes that took different sides of an `if` meet again where they
join. While every live lane is in the mask and a branch goes one way for all, the warp jumps
straight to the target without looking at counters.

Waits: `bar.sync` (a whole-block barrier) parks the lanes that reach it; when no lane of the
warp can go on, the warp returns to the block loop (`run_blocks`), which runs the other warps
and resumes it once all have arrived or exited; registers live across the barrier are saved in
the warp's frame. Warp operations (shfl.sync, vote.sync, activemask, bar.warp.sync) are
vector operations of the mask's lanes; lanes that arrive before the other members of their
member mask park until those come.

Kernels that use anything this path does not lower yet (a device-function call, .local memory,
counted or reducing barriers, atomics other than the common read-modify-writes, ...) run on
the scalar path of cpu.py, per kernel: `build` raises GangUnsupported with the reason.
"""

from __future__ import annotations

import os

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    LOWERINGS,
    PTR,
    FunctionLowering,
    const_int,
    loop_headers,
    value_type,
)
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.ops.sync import shuffle_source
from ptxport.errors import InternalError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_after, live_before, may_write, uses_and_defs
from ptxport.ir.types import TYPES, Type
from ptxport.passes.uniformity import (
    thread_x_copies,
    uniform_registers,
    warp_index_of,
    warp_uniform_indices,
)
from ptxport.ptx.ast import IntImm, Sink

__all__ = ["build", "check", "W", "BARRIER", "NOT_MEMBER", "DEADLOCK", "enabled"]

W = 32
EXIT_PC = 0x7FFFFFFF
# What the gang function returns besides -1 (every lane exited) and cpu.FAULTED.
BARRIER = 1
DEADLOCK = -(1 << 25)       # lanes wait at a warp operation for members that never come
NOT_MEMBER = -(1 << 25) - 1  # a lane executes a warp operation whose mask does not name it
# The warp frame: run_blocks' status word, the parked lanes, where the warp resumes when all
# its live lanes wait at one barrier (else -1) and those lanes, the lanes' counters, the
# registers that live across resume points.
_STATUS, _PARKED, _RESUME, _RESUME_LANES, _PC, _REGISTERS = 0, 4, 8, 12, 128, 256
# Where a fault leaves the faulting lane (the block context's scratch area).
_SCRATCH_LANE = 128

FULL = (1 << W) - 1


def enabled() -> bool:
    """Whether kernels run as warp gangs (PTXPORT_CPU_GANG=0 turns it off, e.g. to compare
    with the scalar path)."""
    return os.environ.get("PTXPORT_CPU_GANG", "1") != "0"


def switches() -> dict[str, bool]:
    """The settings that change the code this path makes (part of kernel images' keys)."""
    return {"gang": enabled(), "full_mask_copies": _FULL_MASK_COPIES}


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


def _vec(t: ll.Type) -> ll.VectorType:
    if isinstance(t, ll.VectorType):
        raise GangUnsupported("packed (vector) PTX types")
    return _Lanes(t, W)


def _is_vec(v) -> bool:
    return isinstance(v.type, ll.VectorType)


def _splat_const(c: ll.Constant, vt: ll.VectorType) -> ll.Constant:
    return ll.Constant(vt, [c] * W)


_SCALAR_NAMES = {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"}


class GangBuilder(ll.IRBuilder):
    """An IRBuilder that lets the shared (scalar-minded) lowerings of ops/ compute on vectors:
    a scalar operand next to a vector is splat to all lanes, casts of vectors cast to vectors,
    and LLVM intrinsics are called in their vector forms. What cannot work lane by lane (a
    branch on a vector condition, a call of a runtime helper) raises GangUnsupported."""

    def splat(self, v: ll.Value, vt: ll.VectorType | None = None) -> ll.Value:
        if _is_vec(v):
            return v
        vt = vt or _vec(v.type)
        if isinstance(v, ll.Constant):
            return _splat_const(v, vt)
        one = ll.IRBuilder.insert_element(self, ll.Constant(vt, None), v, I32(0))
        return ll.IRBuilder.shuffle_vector(self, one, ll.Constant(vt, None),
                                           ll.Constant(ll.VectorType(I32, W), [0] * W))

    def _insert(self, instr):
        # vectors of the warp's lanes answer as _Lanes, whichever instruction made them
        t = getattr(instr, "type", None)
        if isinstance(t, ll.VectorType) and not isinstance(t, _Lanes) and t.count == W:
            instr.type = _Lanes(t.element, W)
        super()._insert(instr)

    def match(self, *values):
        if not any(_is_vec(v) for v in values):
            return values
        return tuple(self.splat(v) for v in values)


def _binary(name):
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
        if _is_vec(value) and not isinstance(typ, ll.VectorType):
            typ = _vec(typ)
        elif not _is_vec(value) and isinstance(typ, ll.VectorType):
            return self.splat(base(self, value, typ.element, *args, **kwargs), typ)
        return base(self, value, typ, *args, **kwargs)
    return method


for _name in ("add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "and_", "or_", "xor", "shl",
              "lshr", "ashr", "fadd", "fsub", "fmul", "fdiv", "frem"):
    setattr(GangBuilder, _name, _binary(_name))
for _name in ("icmp_signed", "icmp_unsigned", "fcmp_ordered", "fcmp_unordered"):
    setattr(GangBuilder, _name, _compare(_name))
for _name in ("trunc", "zext", "sext", "fptrunc", "fpext", "fptosi", "fptoui", "sitofp",
              "uitofp", "bitcast", "ptrtoint", "inttoptr"):
    setattr(GangBuilder, _name, _cast(_name))


def _select(self, cond, lhs, rhs, *args, **kwargs):
    if _is_vec(lhs) or _is_vec(rhs) or _is_vec(cond):
        lhs, rhs = self.match(lhs, rhs)
        if not _is_vec(lhs):
            lhs, rhs = self.splat(lhs), self.splat(rhs)
    return ll.IRBuilder.select(self, cond, lhs, rhs, *args, **kwargs)


def _cbranch(self, cond, *args, **kwargs):
    if _is_vec(cond):
        raise GangUnsupported("a lowering that branches on a lane's value")
    return ll.IRBuilder.cbranch(self, cond, *args, **kwargs)


def _call(self, fn, args, *rest, **kwargs):
    if not any(_is_vec(a) for a in args):
        return ll.IRBuilder.call(self, fn, args, *rest, **kwargs)
    name = fn.name
    if not name.startswith("llvm.") or isinstance(fn.function_type.return_type,
                                                     ll.LiteralStructType):
        raise GangUnsupported(f"a call of {name} on lanes")
    vectors = []
    for a, t in zip(args, fn.function_type.args, strict=True):
        # flags (i1 is_zero_poison ...) stay scalar where the intrinsic wants a scalar
        vectors.append(a if (not _is_vec(a) and isinstance(t, ll.IntType) and t.width == 1
                             and isinstance(a, ll.Constant)) else self.splat(a))
    parts = [f"v{W}{p}" if p in _SCALAR_NAMES else p for p in name.split(".")]
    vname = ".".join(parts)
    ret = fn.function_type.return_type
    vret = ret if isinstance(ret, ll.VoidType) else _vec(ret)
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
        if not any(_is_vec(a) for a in args if isinstance(a, ll.Value)):
            return base(self, *args, **kwargs)
        values = [self.splat(a) for a in args if not (isinstance(a, ll.Constant)
                                                      and a.type == I1)]
        flags = [a for a in args if isinstance(a, ll.Constant) and a.type == I1]
        vt = values[0].type
        fn = _declare(self.module, f"llvm.{llvm_name}.{vt.intrinsic_name}", vt,
                      [v.type for v in values] + [I1] * len(flags))
        return ll.IRBuilder.call(self, fn, values + flags)
    return method


for _name in ("ctpop", "ctlz", "cttz", "bitreverse", "bswap", "fma"):
    setattr(GangBuilder, _name, _lane_intrinsic(_name))
for _name in ("convert_from_fp16", "convert_to_fp16"):
    setattr(GangBuilder, _name, _refuse(f"{_name} on lanes"))


def _declare(llmod, name, ret, args):
    existing = llmod.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(llmod, ll.FunctionType(ret, args), name)


# --- which kernels ----------------------------------------------------------------------------

_SIMPLE = {"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg",
           "min", "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "set", "selp",
           "slct", "mov", "cvt", "cvta", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin",
           "cos", "tanh", "copysign", "testp", "bfe", "bfi", "prmt", "lop3", "shf", "popc",
           "clz", "brev", "bfind", "membar", "fence", "nanosleep", "prefetch", "prefetchu",
           "szext", "bmsk"}
_MEMORY_GROUPS = {"space", "sem", "scope", "nc", "vec", "cop"}
_ATOMIC_OPS = {"add", "min", "max", "and", "or", "xor", "exch", "cas"}


def _refusal(module: ir.Module, kernel: ir.Function) -> str | None:
    """Why the gang path does not take `kernel` (None: it does)."""
    if any(v.space == "local" for v in kernel.variables.values()):
        return ".local memory"
    named = _variables_named(kernel)
    tables = [v.name for v in module.globals.values()
              if v.name in named and any(isinstance(item, ir.SymbolAddress) and
                                         isinstance(item.target, ir.Function)
                                         for item in v.init or [])]
    if tables:
        # its entries are the addresses of the device functions compiled with the kernel
        return f"'{tables[0]}': a table of function addresses (a C++ vtable)"
    for inst in kernel.instructions():
        op, spec = inst.opcode, inst.spec
        types = spec.types
        if any(t.endswith(("x2", "x4")) or t in ("f16", "bf16") for t in types):
            return f"{spec.text}: 16-bit float or packed types"
        if spec.get("cc") or op in ("addc", "subc", "madc"):
            return f"{spec.text}: the carry flag"
        if op in _SIMPLE:
            if op == "cvta" and state_space(inst) == "local":
                return f"{spec.text}: local memory"
            continue
        if op in ("ld", "ldu", "st"):
            space = state_space(inst)
            extra = [g for g in spec.groups if g not in _MEMORY_GROUPS
                     and not g.startswith(("level", "cache", "eviction", "L2", "L1"))]
            if extra:
                return f"{spec.text}: {', '.join(extra)}"
            if space == "local" or spec.get("sem") not in (None, "weak"):
                return f"{spec.text}: {space} space or memory ordering"
            if space == "param" and not _uniform_address(inst.operands[1 if op != "st" else 0]):
                return f"{spec.text}: a parameter read through a register"
            if op == "st" and space == "param":
                return f"{spec.text}: a parameter store"
            continue
        if op in ("atom", "red"):
            space = state_space(inst)
            if set(spec.groups) - {"space", "sem", "scope", "op"}:
                return f"{spec.text}: this atomic form"
            if space not in (None, "global", "shared") or spec.get("sem") not in (None, "relaxed") \
                    or spec.get("op") not in _ATOMIC_OPS or vector_count(inst) != 1:
                return f"{spec.text}: this atomic form"
            continue
        if op in ("bra",):
            continue
        if op in ("ret", "exit"):
            continue
        if op in ("bar", "barrier"):
            if spec.has("warp"):
                if inst.guard is not None:
                    return f"{spec.text}: a guarded warp barrier"
                continue
            if spec.get("op") not in (None, "sync") or spec.get("scope") == "cluster" \
                    or len(inst.operands) != 1 or inst.guard is not None:
                return f"{spec.text}: counted, reducing or arrive-only barriers"
            continue
        if op in ("shfl", "vote", "activemask"):
            if op != "activemask" and not spec.has("sync"):
                return f"{spec.text}: warp operations without .sync"
            if op == "vote" and spec.get("mode") not in ("all", "any", "uni", "ballot"):
                return f"{spec.text}: this vote"
            if inst.guard is not None:
                return f"{spec.text}: a guarded warp operation"
            continue
        return f"{spec.text}: not lowered for warp gangs yet"
    return None


def _variables_named(kernel: ir.Function) -> set[str]:
    """The names of the variables the kernel's instructions name (or take addresses of)."""
    names: set[str] = set()

    def visit(value) -> None:
        if isinstance(value, ir.Variable):
            names.add(value.name)
        elif isinstance(value, ir.SymbolAddress):
            visit(value.target)
        elif isinstance(value, ir.Address):
            visit(value.base)
        elif isinstance(value, ir.VectorValue | ir.ListValue):
            for element in value.elements:
                visit(element)

    for inst in kernel.instructions():
        for operand in inst.operands:
            visit(operand)
    return names


def _uniform_address(operand) -> bool:
    return isinstance(operand, ir.Address) and not isinstance(operand.base, ir.Register)


def _is_barrier(inst: ir.Instruction) -> bool:
    return inst.opcode in ("bar", "barrier") and not inst.spec.has("warp")


def _is_warp_op(inst: ir.Instruction) -> bool:
    return inst.opcode in ("shfl", "vote", "activemask") or (
        inst.opcode in ("bar", "barrier") and inst.spec.has("warp"))


# --- segments ---------------------------------------------------------------------------------

class _Segment:
    __slots__ = ("number", "block", "start", "end", "llblock")

    def __init__(self, number, block, start, end):
        self.number, self.block, self.start, self.end = number, block, start, end
        self.llblock = None


def _segments(kernel: ir.Function) -> list[_Segment]:
    """The kernel's code cut into segments: at block starts, before each warp operation (a
    lane may have to wait there and come back) and after each barrier (where a warp resumes)."""
    out = []
    for block in kernel.blocks:
        start = 0
        for i, inst in enumerate(block.instructions):
            if _is_warp_op(inst) and i > start:
                out.append(_Segment(len(out), block, start, i))
                start = i
            if _is_barrier(inst):
                out.append(_Segment(len(out), block, start, i + 1))
                start = i + 1
        out.append(_Segment(len(out), block, start, len(block.instructions)))
    return out


# --- the target: special registers and windows ------------------------------------------------

def _gang_target_class():
    from ptxport.codegen.targets.cpu.module import CpuTarget

    class GangTarget(CpuTarget):
        """CpuTarget's answers, per lane where they differ by lane."""

        def special_register(self, fl, reg):
            name = reg.name
            axis = "xyzw".find(reg.component) if reg.component else 0
            b = fl.b
            if name == "%tid":
                if axis >= 3:
                    return I32(0)
                return fl.thread_index(axis)
            if name == "%ntid":
                return I32(fl.block[axis] if axis < 3 else 0)
            if name == "%nwarpid":
                return I32((fl.block[0] * fl.block[1] * fl.block[2] + W - 1) // W)
            if name == "%laneid":
                return fl.lane
            if name == "%warpid":
                return fl.warp_number
            if name.startswith("%lanemask_"):
                one = b.shl(b.splat(I32(1)), fl.lane)
                below = b.sub(one, b.splat(I32(1)))
                kind = name[len("%lanemask_"):]
                return {"eq": lambda: one, "lt": lambda: below,
                        "le": lambda: b.or_(below, one),
                        "gt": lambda: b.not_(b.or_(below, one)),
                        "ge": lambda: b.not_(below)}[kind]()
            return super().special_register(fl, reg)

        def space_base(self, fl, space):
            if space == "local":
                raise GangUnsupported("local memory")
            return super().space_base(fl, space)

        def exit(self, fl):
            raise GangUnsupported("exit through the shared lowering")

        def trap(self, fl, inst):
            raise GangUnsupported("trap")

        def synchronize(self, fl, inst):
            raise GangUnsupported("a wait through the shared lowering")

    return GangTarget


# --- lowering ---------------------------------------------------------------------------------

class GangLowering(FunctionLowering):
    """FunctionLowering with every register a vector of the warp's lanes."""

    def __init__(self, module, function, llfn, target, plan, block):
        super().__init__(module, function, llfn, target)
        self.b = GangBuilder(self.entry)
        self.plan = plan
        self.mask = None
        self.guard = None
        self.block = block      # the block shape the code is for
        self.thread_x = thread_x_copies(function)
        self.uniform = uniform_registers(function, block, self.thread_x)
        # within a segment: the lanes' addresses read from a base, and how they lie
        # (_place, _classify); a write of the base register forgets them
        self.places: dict = {}
        self.patterns: dict = {}
        # within a segment: which unguarded accesses share a base (until it is written) and
        # size, and the span of their offsets (_access_groups); each group's accesses are
        # checked together once (_group_check)
        self.group_of: dict = {}
        self.group_span: dict = {}
        self.group_ok: dict = {}
        self.constants = _constant_registers(function)
        self.read_somewhere = set().union(
            *(uses_and_defs(inst)[0] for inst in function.instructions()))

    # registers and values

    def storage_type(self, reg: ir.Register) -> ll.Type:
        if reg in self.uniform:     # one value for the whole warp (cpu_uniform.py)
            return super().storage_type(reg)
        element = _vec(value_type(reg.type))
        return ll.ArrayType(element, reg.vector) if reg.vector else element

    def carry_flag(self):
        raise GangUnsupported("the carry flag")

    def unsupported(self, inst, reason):
        return GangUnsupported(f"{inst.spec.text}: {reason}")

    def read(self, value, t):
        """A vector of the lanes' values, or one scalar where every lane has the same (a
        uniform register, a constant, a parameter...): GangBuilder splats it where it meets
        a vector."""
        return super().read(value, TYPES[t] if isinstance(t, str) else t)

    def read_lanes(self, value, t):
        """read, as a vector of the lanes' values."""
        return self.b.splat(self.read(value, t))

    def as_int(self, v):
        if not _is_vec(v):
            return super().as_int(v)
        element = v.type.element
        if isinstance(element, ll.IntType):
            return v
        width = {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(element)]
        return self.b.bitcast(v, _vec(ll.IntType(width)))

    def _resize(self, v, have: Type, want: Type, signed_from: Type):
        target = _vec(value_type(want))
        if v.type == target:
            return v
        bits = self.as_int(v)
        width = want.bits
        if bits.type.element.width > width:
            bits = self.b.trunc(bits, _vec(ll.IntType(width)))
        elif bits.type.element.width < width:
            extend = self.b.sext if signed_from.kind == "signed" else self.b.zext
            bits = extend(bits, _vec(ll.IntType(width)))
        return bits if bits.type == target else self.b.bitcast(bits, target)

    def convert(self, v, have, want):
        if not _is_vec(v):
            return super().convert(v, have, want)
        return self._resize(v, have, want, have)

    def convert_out(self, v, have, register):
        if not _is_vec(v):
            v = self.b.splat(v)
        return self._resize(v, have, register, have)

    def forget_segment(self, instructions=()):
        self.places.clear()
        self.patterns.clear()
        self.group_ok.clear()
        self.group_of, self.group_span = _access_groups(self, instructions)

    def constant_of(self, operand) -> int | None:
        """The value of an immediate operand, or of a register whose one definition in the
        kernel is an unguarded mov of an immediate (what NVRTC makes of shuffle offsets);
        None otherwise. (Reading that register before its mov reads an undefined value.)"""
        if isinstance(operand, IntImm):
            return operand.value
        if isinstance(operand, ir.Register):
            return self.constants.get(operand)
        return None

    def _forget(self, reg: ir.Register) -> None:
        for key in [k for k in self.places if k[0] == id(reg)]:
            del self.places[key]
        for key in [k for k in self.patterns if k[0][0] == id(reg)]:
            del self.patterns[key]

    def write(self, dest, v, t):
        t = TYPES[t] if isinstance(t, str) else t
        if isinstance(dest, Sink):
            return
        self._forget(dest.register if isinstance(dest, ir.RegisterElement) else dest)
        if isinstance(dest, ir.Register) and dest in self.uniform:
            if _is_vec(v) and warp_index_of(self.inst, self.block, self.thread_x):
                # threadIdx.x / 32 in 32-wide rows: computed per lane, alike in all (every
                # lane's threadIdx.x is computed, active or not)
                v = ll.IRBuilder.extract_element(self.b, v, I32(0))
            if _is_vec(v) or (self.guard is not None and _is_vec(self.guard)):
                raise GangUnsupported(
                    f"{self.inst.spec.text}: a per-lane value for the uniform register "
                    f"{dest.name} (a gap in cpu_uniform.py's analysis)")
            value = FunctionLowering.convert_out(self, v, t, dest.type)
            slot = self.register_slot(dest)
            if self.guard is not None:
                value = self.b.select(self.guard, value, self.b.load(slot))
            self.b.store(value, slot)
            return
        if isinstance(dest, ir.Register) and not dest.vector:
            value = self.convert_out(v, t, dest.type)
            slot = self.register_slot(dest)
            if self._keeps_old(dest):
                value = self.b.select(self.mask, value, self.b.load(slot))
            self.b.store(value, slot)
            return
        if isinstance(dest, ir.RegisterElement):
            reg = dest.register
            index = "xyzw".find(dest.component)
            if not reg.vector or index < 0:
                raise GangUnsupported(f"the selector .{dest.component}")
            slot = self.register_slot(reg)
            array = self.b.load(slot)
            value = self.convert_out(v, t, reg.type)
            if self._keeps_old(reg):
                value = self.b.select(self.mask, value, self.b.extract_value(array, index))
            self.b.store(self.b.insert_value(array, value, index), slot)
            return
        raise GangUnsupported(f"a result into {dest!r}")

    def _keeps_old(self, reg: ir.Register) -> bool:
        """Whether a write of `reg` must keep the old value in the lanes outside the mask:
        when the instruction is guarded (the mask's other lanes go on reading it), or when
        `reg` is live where a segment starts (lanes elsewhere may read it when they come).
        Else every lane that reads `reg` later reads this write's value or a later one."""
        return self.inst.guard is not None or reg in self.crossing

    def write_vector(self, dest, values, t):
        if isinstance(dest, ir.Register) and dest.vector == len(values):
            for i, v in enumerate(values):
                self.write(ir.RegisterElement(dest, "xyzw"[i]), v, t)
            return
        super().write_vector(dest, values, t)

    # lane masks as integers

    def bits(self, mask) -> ll.Value:
        return ll.IRBuilder.bitcast(self.b, mask, I32)

    def lanes(self, bits) -> ll.Value:
        return ll.IRBuilder.bitcast(self.b, bits, _vec(I1))

    def cttz(self, v):
        fn = _declare(self.llfn.module, "llvm.cttz.i32", I32, [I32, I1])
        return ll.IRBuilder.call(self.b, fn, [v, I1(0)])

    def ctlz(self, v):
        fn = _declare(self.llfn.module, "llvm.ctlz.i32", I32, [I32, I1])
        return ll.IRBuilder.call(self.b, fn, [v, I1(0)])

    def reduce(self, op: str, v):
        element = v.type.element
        fn = _declare(self.llfn.module, f"llvm.vector.reduce.{op}.v{W}i{element.width}",
                      element, [v.type])
        return ll.IRBuilder.call(self.b, fn, [v])

    # instructions

    def lowering_for(self, inst):
        own = _GANG_LOWERINGS.get(inst.opcode)
        return own or LOWERINGS.get(inst.opcode)

    def _lower_instruction(self, inst):
        self.inst = inst
        self.guard = None
        lower = self.lowering_for(inst)
        if lower is None:
            raise GangUnsupported(f"{inst.spec.text}: no lowering")
        if inst.guard is None or inst.opcode == "bra":
            lower(self, inst)
            return
        guard = self.guard_value(inst)
        outer = self.mask
        self.mask = self.b.and_(outer, guard)
        self.guard = guard
        lower(self, inst)
        self.guard = None
        if inst.opcode in ("ret", "exit"):      # the lanes that did not exit go on
            outer = self.b.and_(outer, self.b.not_(guard))
            self.b.store(outer, self.mask_slot)
        self.mask = outer


# --- control ----------------------------------------------------------------------------------

def _others_before(fl: GangLowering, number: int) -> ll.Value:
    """i1: a live lane outside the mask that is not parked waits at segment `number` or
    before it (so going straight there is not what the dispatcher would do). The dispatcher
    notes those lanes and the lowest segment they wait at when it picks the mask; until the
    warp goes back to it, no lane outside the mask moves, so the note holds."""
    b = fl.b
    return ll.IRBuilder.icmp_unsigned(b, "<=", b.load(fl.others_min_slot), I32(number))


def _set_pc(fl: GangLowering, lanes, value) -> None:
    b = fl.b
    pc = b.load(fl.pc_slot)
    b.store(ll.IRBuilder.select(b, lanes, b.splat(value), pc), fl.pc_slot)


def _go(fl: GangLowering, segment: _Segment) -> None:
    """All lanes of the mask go to `segment`."""
    b = fl.b
    direct = fl.llfn.append_basic_block("direct")
    via = fl.llfn.append_basic_block("via_dispatch")
    ll.IRBuilder.cbranch(b, _others_before(fl, segment.number), via, direct)
    b.position_at_end(direct)
    b.store(fl.mask, fl.mask_slot)
    b.branch(segment.llblock)
    b.position_at_end(via)
    # the others all wait at `segment` (the other side of an if, at its join): they join
    # the mask there, as the dispatcher would have it
    others = b.load(fl.others_slot)
    there = fl.bits(ll.IRBuilder.icmp_unsigned(b, "==", b.load(fl.pc_slot),
                                               b.splat(I32(segment.number))))
    join, elsewhere = (fl.llfn.append_basic_block(n) for n in ("join", "elsewhere"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", b.and_(others, b.not_(there)),
                                                       I32(0)), join, elsewhere)
    b.position_at_end(join)
    b.store(b.or_(fl.mask, fl.lanes(others)), fl.mask_slot)
    b.store(I32(0), fl.others_slot)
    b.store(I32(EXIT_PC), fl.others_min_slot)
    b.branch(segment.llblock)
    b.position_at_end(elsewhere)
    _set_pc(fl, fl.mask, I32(segment.number))
    b.branch(fl.dispatch)


def _bra(fl: GangLowering, inst: ir.Instruction) -> None:
    b = fl.b
    target = fl.first_segment[id(inst.operands[0])]
    if inst.guard is None:
        _go(fl, target)
        b.position_at_end(fl.llfn.append_basic_block("after_bra"))
        return
    following = fl.next_segment(inst)
    guard = fl.guard_value(inst)
    taken = fl.bits(b.and_(fl.mask, guard))
    mask_bits = fl.bits(fl.mask)
    diverged = fl.llfn.append_basic_block("diverged")
    all_taken, none_taken = (fl.llfn.append_basic_block(n) for n in ("taken", "not_taken"))
    uniform = fl.llfn.append_basic_block("uniform")
    # (others that wait further on do not matter: the mask's lanes run first either way)
    ll.IRBuilder.cbranch(b, _others_before(fl, max(target.number, following.number)),
                         diverged, uniform)
    b.position_at_end(uniform)
    check_none = fl.llfn.append_basic_block("check_none")
    if not _is_vec(guard):      # a uniform predicate: every lane of the mask goes one way
        ll.IRBuilder.cbranch(b, guard, all_taken, none_taken)
    else:
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", taken, mask_bits),
                             all_taken, check_none)
    b.position_at_end(check_none)
    split = fl.llfn.append_basic_block("split")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", taken, I32(0)), none_taken,
                         split)
    for block, segment in ((all_taken, target), (none_taken, following)):
        b.position_at_end(block)
        b.store(fl.mask, fl.mask_slot)
        b.branch(segment.llblock)

    def note_counters():
        pcs = ll.IRBuilder.select(b, guard, b.splat(I32(target.number)),
                                  b.splat(I32(following.number)))
        b.store(ll.IRBuilder.select(b, fl.mask, pcs, b.load(fl.pc_slot)), fl.pc_slot)
    # the mask splits and no lane elsewhere waits before either side: the side with the
    # lower counter goes first, as the dispatcher would choose, and the other side's lanes
    # wait (before any other lane)
    b.position_at_end(split)
    note_counters()
    first_taken = target.number < following.number
    first = b.and_(fl.mask, guard if first_taken else b.not_(guard))
    b.store(first, fl.mask_slot)
    b.store(b.or_(b.load(fl.others_slot), b.and_(mask_bits, b.not_(fl.bits(first)))),
            fl.others_slot)
    b.store(I32(max(target.number, following.number)), fl.others_min_slot)
    b.branch((target if first_taken else following).llblock)
    b.position_at_end(diverged)
    note_counters()
    b.branch(fl.dispatch)
    b.position_at_end(fl.llfn.append_basic_block("after_bra"))


def _ret(fl: GangLowering, inst: ir.Instruction) -> None:
    b = fl.b
    _set_pc(fl, fl.mask, I32(EXIT_PC))
    if inst.guard is None:
        b.branch(fl.dispatch)
        b.position_at_end(fl.llfn.append_basic_block("after_ret"))


def _barrier(fl: GangLowering, inst: ir.Instruction) -> None:
    """bar.sync / barrier.sync a (every thread of the block): the lanes wait at the segment
    after it; the warp returns to the block loop once none of its lanes can go on."""
    b = fl.b
    following = fl.next_segment(inst)
    _set_pc(fl, fl.mask, I32(following.number))
    if following.block is not None:
        # Every live lane of the warp is here (none elsewhere, parked or at a barrier):
        # return at once, and resume straight at the segment after the barrier.
        others = b.or_(b.load(fl.others_slot),
                       b.or_(b.load(fl.parked_slot), b.load(fl.barrier_slot)))
        alone, with_others = (fl.llfn.append_basic_block(n) for n in (
            "barrier_alone", "barrier_with_others"))
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", others, I32(0)), alone,
                             with_others)
        b.position_at_end(alone)
        # (the lanes' counters are not saved: on resuming they are these lanes' at the
        # segment after the barrier, the others' exited)
        b.store(I32(following.number), fl.frame_field(_RESUME))
        b.store(fl.bits(fl.mask), fl.frame_field(_RESUME_LANES))
        b.ret(I32(BARRIER))
        if following.number not in fl.resumed_at:
            fl.resumed_at.add(following.number)
            fl.resume_switch.add_case(I32(following.number), following.llblock)
        b.position_at_end(with_others)
    b.store(b.or_(b.load(fl.barrier_slot), fl.bits(fl.mask)), fl.barrier_slot)
    b.branch(fl.dispatch)
    b.position_at_end(fl.llfn.append_basic_block("after_barrier"))


def _member_mask(fl: GangLowering, inst: ir.Instruction, index: int) -> ll.Value:
    """The member mask: one i32 where every lane holds the same, else a vector of each lane's
    (cooperative groups' tiles: lane l of a 4-lane tile names 0xF << (l & ~3))."""
    if len(inst.operands) <= index or isinstance(inst.operands[index], Sink):
        return I32(FULL)
    return fl.read(inst.operands[index], "b32")


_LANE_BITS = ll.Constant(_vec(I32), [1 << lane for lane in range(W)])


def _converge(fl: GangLowering, inst: ir.Instruction, members) -> None:
    """Before a warp operation: each lane of the mask waits for the live lanes its own
    member mask names (PTX ISA 9.7.9.6, 9.7.13: "until all non-exited threads corresponding
    to membermask have executed" it). Lanes whose members are still elsewhere park here
    until those come (the segment starts at this instruction); the others go on. A lane
    whose mask does not name it is an error (undefined in PTX)."""
    b = fl.b
    segment = fl.segment_at[id(inst)]
    alone_mask = fl.mask
    # no lane elsewhere that could still come (the warp is converged): straight on
    elsewhere = b.or_(b.load(fl.others_slot),
                      b.or_(b.load(fl.parked_slot), b.load(fl.barrier_slot)))
    alone, gather = fl.llfn.append_basic_block("alone"), fl.llfn.append_basic_block(
        "gather_members")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", elsewhere, I32(0)), alone,
                         gather)
    alone_block = alone
    b.position_at_end(gather)
    pc = b.load(fl.pc_slot)
    # lanes parked here before join the mask
    parked = b.load(fl.parked_slot)
    here = b.and_(parked, fl.bits(ll.IRBuilder.icmp_unsigned(
        b, "==", pc, b.splat(I32(segment.number)))))
    b.store(b.and_(parked, b.not_(here)), fl.parked_slot)
    gathered = b.or_(fl.mask, fl.lanes(here))
    b.store(gathered, fl.mask_slot)
    alive = fl.bits(ll.IRBuilder.icmp_unsigned(b, "!=", pc, fl.exit_pcs))
    ready = _members_here(fl, gathered, members, alive)
    park = fl.llfn.append_basic_block("park")
    check = fl.llfn.append_basic_block("members_here")
    gathered_block = b.block
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(ready), I32(0)), park,
                         check)
    b.position_at_end(park)
    _set_pc(fl, gathered, I32(segment.number))
    b.store(b.or_(b.load(fl.parked_slot), fl.bits(gathered)), fl.parked_slot)
    b.branch(fl.dispatch)
    b.position_at_end(alone)
    b.branch(check)
    b.position_at_end(check)
    fl.mask = ll.IRBuilder.phi(b, alone_mask.type)
    fl.mask.add_incoming(alone_mask, alone_block)
    fl.mask.add_incoming(ready, gathered_block)
    if _is_vec(members):        # each lane must be in its own mask
        outside = fl.bits(b.and_(fl.mask, ll.IRBuilder.icmp_unsigned(
            b, "==", b.and_(members, _LANE_BITS), ll.Constant(_vec(I32), [0] * W))))
    else:
        outside = b.and_(fl.bits(fl.mask), b.not_(members))
    bad = fl.llfn.append_basic_block("not_member")
    go = fl.llfn.append_basic_block("warp_op")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", outside, I32(0)), bad, go)
    b.position_at_end(bad)
    b.store(fl.cttz(outside), fl.scratch_lane)
    b.ret(I32(NOT_MEMBER))
    b.position_at_end(go)


def _members_here(fl: GangLowering, gathered, members, alive) -> ll.Value:
    """The lanes of `gathered` whose live members are all in it. Those go on; the others of
    `gathered` park at the current segment (their pc is set to it), until their members come."""
    b = fl.b
    absent = b.and_(alive, b.not_(fl.bits(gathered)))
    if not _is_vec(members):
        waits = ll.IRBuilder.icmp_unsigned(b, "!=", b.and_(members, absent), I32(0))
        return ll.IRBuilder.select(b, waits, ll.Constant(gathered.type, [I1(0)] * W),
                                   gathered)
    ready = b.and_(gathered, ll.IRBuilder.icmp_unsigned(
        b, "==", b.and_(members, absent), ll.Constant(_vec(I32), [0] * W)))
    waiting = b.and_(gathered, b.not_(ready))
    segment = fl.segment_at[id(fl.inst)]
    _set_pc(fl, waiting, I32(segment.number))
    b.store(b.or_(b.load(fl.parked_slot), fl.bits(waiting)), fl.parked_slot)
    b.store(ready, fl.mask_slot)
    return ready


def _warp_barrier(fl: GangLowering, inst: ir.Instruction) -> None:
    _converge(fl, inst, _member_mask(fl, inst, 0))


def _activemask(fl: GangLowering, inst: ir.Instruction) -> None:
    fl.write(inst.operands[0], fl.bits(fl.mask), "b32")


def _vote(fl: GangLowering, inst: ir.Instruction) -> None:
    b = fl.b
    members = _member_mask(fl, inst, 2)
    _converge(fl, inst, members)
    # each lane's own members (a vector where the lanes' masks differ)
    part = b.and_(members, fl.bits(fl.mask))
    true = fl.bits(b.and_(fl.read(inst.operands[1], "pred"), fl.mask))
    mode = inst.spec.get("mode")
    if mode == "ballot":
        fl.write(inst.operands[0], b.and_(part, true), "b32")
        return
    zero = I32(0)
    if mode == "all":
        result = b.icmp_unsigned("==", b.and_(part, b.not_(true)), zero)
    elif mode == "any":
        result = b.icmp_unsigned("!=", b.and_(part, true), zero)
    else:
        result = b.or_(b.icmp_unsigned("==", b.and_(part, true), zero),
                       b.icmp_unsigned("==", b.and_(part, b.not_(true)), zero))
    fl.write(inst.operands[0], result, "pred")


def _shuffle_sources(mode: str, bval: int, c: int) -> tuple[list[int], list[bool]]:
    """For shfl.sync.mode with lane operand b and clamp/segment operand c, both known: each
    lane's source lane (its own when the source is out of range) and whether it is in
    range (cpu_sync.shuffle_sources, the thread-by-thread path's)."""
    import numpy as np

    from ptxport.codegen.targets.cpu.waits import shuffle_sources

    sources, valid = shuffle_sources(mode, np.arange(W, dtype=np.int64), bval & 0x1F, c)
    return [int(j) for j in sources], [bool(v) for v in valid]


def _shfl(fl: GangLowering, inst: ir.Instruction) -> None:
    """shfl.sync.{up,down,bfly,idx}.b32 d{|p}, a, b, c, membermask (PTX ISA 9.7.9.6); a
    source lane outside the mask gives whatever its register holds (unpredictable in PTX)."""
    b = fl.b
    _converge(fl, inst, _member_mask(fl, inst, 4))
    dest = inst.operands[0]
    dest, pred = (dest.first, dest.second) if isinstance(dest, ir.PairValue) else (dest, None)
    a = fl.read_lanes(inst.operands[1], "b32")
    known = [fl.constant_of(o) for o in inst.operands[2:4]]
    if None not in known:
        # lane offset and clamp known when compiling (the common case): one shuffle of
        # the lanes by constant indices
        sources, valid = _shuffle_sources(inst.spec.get("mode"), *known)
        indices = ll.Constant(ll.VectorType(I32, W), sources)
        result = ll.IRBuilder.shuffle_vector(b, a, ll.Constant(a.type, None), indices)
        result.type = a.type
        if dest is not None:
            fl.write(dest, result, "b32")
        if pred is not None:
            fl.write(pred, ll.Constant(_vec(I1), [I1(v) for v in valid]), "pred")
        return
    j, valid = shuffle_source(b, inst.spec.get("mode"), fl.lane,
                              fl.read(inst.operands[2], "b32"), fl.read(inst.operands[3], "b32"))
    b.store(a, fl.shuffle_slot)
    start = b.splat(ll.IRBuilder.ptrtoint(b, fl.shuffle_slot, I64))
    pointers = b.inttoptr(b.add(start, b.shl(b.zext(j, _vec(I64)), b.splat(I64(2)))),
                          _vec(PTR))
    gather = _declare(fl.llfn.module, f"llvm.masked.gather.v{W}i32.v{W}p0", _vec(I32),
                      [_vec(PTR), I32, _vec(I1), _vec(I32)])
    result = ll.IRBuilder.call(b, gather, [pointers, I32(4), b.splat(I1(1)),
                                           ll.Constant(_vec(I32), None)])
    if dest is not None:
        fl.write(dest, result, "b32")
    if pred is not None:
        fl.write(pred, valid, "pred")


# --- memory -----------------------------------------------------------------------------------

_NAMES = {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}


def _type_name(t: ll.Type) -> str:
    return f"i{t.width}" if isinstance(t, ll.IntType) else _NAMES[str(t)]


def _addresses(fl: GangLowering, operand, space: str | None, lanes: bool = True):
    """(host addresses i64, offsets into the shared window or None), or (None, 32-bit shared
    offsets): vectors of the lanes' values, or (lanes False) scalars where every lane's
    address is the same (a uniform base register, a variable, an absolute address)."""
    b = fl.b
    if not isinstance(operand, ir.Address):
        raise GangUnsupported("a memory operand that is not [address]")
    base, offset = operand.base, operand.offset
    window = fl.target.space_base(fl, space) if space == "shared" else None
    if isinstance(base, ir.Variable):
        pointer = fl.target.variable_pointer(fl, base)
        address = ll.IRBuilder.ptrtoint(b, pointer, I64)
        if window is not None:
            address = b.sub(address, ll.IRBuilder.ptrtoint(b, window, I64))
    elif base is None:
        address = I64(0)
    else:
        address = fl.read(base, "u64" if base.type.bits == 64 else "u32")
        if base.type.bits != 64:
            if window is not None:      # a 32-bit shared address: stays 32-bit (cheaper)
                if offset:
                    address = b.add(address, const_int(I32, offset))
                return None, b.splat(address) if lanes else address
            address = b.zext(address, I64)
    if offset:
        address = b.add(address, const_int(I64, offset))
    host = address if window is None else b.add(address, ll.IRBuilder.ptrtoint(b, window, I64))
    offsets = None if window is None else address
    if not lanes:
        return host, offsets
    return b.splat(host), None if offsets is None else b.splat(offsets)


def _fault(fl: GangLowering, lane, address, size: int, write: bool) -> None:
    from ptxport.codegen.targets.cpu.module import CTX, FAULTED, _line

    b = fl.b
    ctx = fl.llfn.args[0]
    line = _line(fl.module, fl.inst.pos)
    b.store(address, b.gep(ctx, [I64(CTX.fields["fault_address"])], source_etype=I8))
    b.store(I64((line << 16) | (size << 1) | int(write)),
            b.gep(ctx, [I64(CTX.fields["fault_info"])], source_etype=I8))
    b.store(lane, fl.scratch_lane)
    b.ret(I32(FAULTED))


def _pattern(fl: GangLowering, addrs, size: int):
    """(consecutive i1, start): whether the mask's lanes' addresses (host i64 or 32-bit shared
    offsets) are `size` apart in lane order, and the address lane 0 would then have."""
    b = fl.b
    element = addrs.type.element
    start = b.sub(addrs, ll.Constant(addrs.type, [size * i for i in range(W)]))
    s = ll.IRBuilder.extract_element(b, start, fl.cttz(fl.bits(fl.mask)))
    differ = ll.IRBuilder.select(b, fl.mask, ll.IRBuilder.icmp_unsigned(
        b, "!=", start, b.splat(s)), b.splat(I1(0)))
    assert s.type == element
    return ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(differ), I32(0)), s


def _check_access(fl: GangLowering, host, offsets, size: int, write: bool, span=None):
    """Check the mask's lanes' accesses of `size` bytes at `host` (`span`: the (low, high)
    the lanes touch, when known; else the lowest and highest address). A bad lane stops the
    kernel there."""
    from ptxport.codegen.targets.cpu.module import _check_function

    b = fl.b
    llfn = fl.llfn
    ok_block = llfn.append_basic_block("access_ok")
    if offsets is not None:
        limit = b.zext(fl.target._ctx_field(fl, "total_smem"), I64)
        fits = ll.IRBuilder.icmp_unsigned(b, "<=", b.add(offsets, b.splat(I64(size))),
                                          b.splat(limit))
        inside = ll.IRBuilder.icmp_unsigned(b, "<", offsets, b.splat(limit))
        good = fl.bits(ll.IRBuilder.select(b, fl.mask, b.and_(fits, inside), b.splat(I1(1))))
        bad_block = llfn.append_basic_block("shared_fault")
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", good, I32(FULL)), ok_block,
                             bad_block)
        b.position_at_end(bad_block)
        lane = fl.cttz(b.not_(good))
        _fault(fl, lane, ll.IRBuilder.extract_element(b, host, lane), size, write)
        b.position_at_end(ok_block)
        return
    # the range the active lanes touch, as one access, against the site's cached allocation
    if span is not None:
        lo, hi = span
    else:
        lo = fl.reduce("umin", ll.IRBuilder.select(b, fl.mask, host, b.splat(I64(-1))))
        hi = b.add(fl.reduce("umax", ll.IRBuilder.select(b, fl.mask, host, b.splat(I64(0)))),
                   I64(size))
    site = fl.plan.check_sites
    fl.plan.check_sites += 1
    cache = fl.target._ctx_field(fl, "site_cache", typ=PTR)
    slot = b.gep(cache, [I64(16 * site)], source_etype=I8)
    c_lo = b.load(slot, typ=I64)
    c_hi = b.load(b.gep(slot, [I64(8)], source_etype=I8), typ=I64)
    hit = b.and_(ll.IRBuilder.icmp_unsigned(b, ">=", lo, c_lo),
                 b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", hi, c_hi),
                        ll.IRBuilder.icmp_unsigned(b, ">=", hi, lo)))
    search = llfn.append_basic_block("access_search")
    ll.IRBuilder.cbranch(b, hit, ok_block, search)
    b.position_at_end(search)
    check = _check_function(fl.llfn.module)
    ctx = llfn.args[0]
    found = ll.IRBuilder.call(b, check, [ctx, lo, b.sub(hi, lo), slot])
    lanes = llfn.append_basic_block("access_lanes")
    ll.IRBuilder.cbranch(b, found, ok_block, lanes)
    # the range spans more than one allocation: each lane on its own
    b.position_at_end(lanes)
    head, body, test, nxt, bad = (llfn.append_basic_block(n) for n in (
        "lane_head", "lane_body", "lane_test", "lane_next", "lane_fault"))
    b.branch(head)
    b.position_at_end(head)
    i = ll.IRBuilder.phi(b, I32)
    i.add_incoming(I32(0), lanes)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "<", i, I32(W)), body, ok_block)
    b.position_at_end(body)
    active = ll.IRBuilder.extract_element(b, fl.mask, i)
    ll.IRBuilder.cbranch(b, active, test, nxt)
    b.position_at_end(test)
    address = ll.IRBuilder.extract_element(b, host, i)
    lane_ok = ll.IRBuilder.call(b, check, [ctx, address, I64(size), slot])
    ll.IRBuilder.cbranch(b, lane_ok, nxt, bad)
    b.position_at_end(nxt)
    i.add_incoming(b.add(i, I32(1)), nxt)
    b.branch(head)
    b.position_at_end(bad)
    _fault(fl, i, address, size, write)
    b.position_at_end(ok_block)


def _check_shared32(fl: GangLowering, offsets, size: int, write: bool):
    """_check_access for 32-bit offsets into the shared window, computed in 32 bits."""
    b = fl.b
    llfn = fl.llfn
    limit = fl.target._ctx_field(fl, "total_smem")
    room = b.sub(limit, I32(size))
    fits = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", offsets, b.splat(room)),
                  b.splat(ll.IRBuilder.icmp_unsigned(b, ">=", limit, I32(size))))
    good = fl.bits(ll.IRBuilder.select(b, fl.mask, fits, b.splat(I1(1))))
    window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
    ok_block, bad_block = llfn.append_basic_block("shared_ok"), llfn.append_basic_block(
        "shared_fault")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", good, I32(FULL)), ok_block,
                         bad_block)
    b.position_at_end(bad_block)
    lane = fl.cttz(b.not_(good))
    _fault(fl, lane, b.add(window, b.zext(ll.IRBuilder.extract_element(b, offsets, lane), I64)),
           size, write)
    b.position_at_end(ok_block)


_HALF = 16      # a half warp: a 16-wide block dimension makes each half a row
# Each segment is lowered twice: for a full mask (a constant) and for any other;
# PTXPORT_CPU_FULL_MASK_COPIES=0 lowers it once (to compare).
_FULL_MASK_COPIES = os.environ.get("PTXPORT_CPU_FULL_MASK_COPIES", "1") != "0"


def _halves(fl: GangLowering, addrs, size: int):
    """(each half consecutive i1, (start0, start1)): whether within each half warp the
    mask's lanes' addresses are `size` apart (size 0: all the same), and each half's lane-0
    address. A half without active lanes counts as consecutive (its start is unused)."""
    b = fl.b
    bits = fl.bits(fl.mask)
    step = ll.Constant(addrs.type, [size * (i % _HALF) for i in range(W)])
    start = b.sub(addrs, step) if size else addrs
    starts = []
    for half in range(2):
        lanes = b.lshr(bits, I32(_HALF * half)) if half else bits
        at = fl.cttz(b.or_(lanes, I32(1 << (_HALF - 1))))
        starts.append(ll.IRBuilder.extract_element(
            b, start, b.add(at, I32(_HALF * half)) if half else at))
    expected = ll.IRBuilder.select(b, _LOW_HALF, b.splat(starts[0]), b.splat(starts[1]))
    differ = ll.IRBuilder.select(b, fl.mask, ll.IRBuilder.icmp_unsigned(
        b, "!=", start, expected), b.splat(I1(0)))
    return ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(differ), I32(0)), starts


_LOW_HALF = ll.Constant(ll.VectorType(I1, W), [I1(i < _HALF) for i in range(W)])


def _half_mask(fl: GangLowering, half: int):
    b = fl.b
    lanes = ll.Constant(ll.VectorType(I32, _HALF), list(range(_HALF * half, _HALF * half + _HALF)))
    return ll.IRBuilder.shuffle_vector(b, fl.mask, ll.Constant(fl.mask.type, None), lanes)


# How the mask's lanes' addresses lie (_classify): consecutive; consecutive within each half
# warp; one address per half warp; anything else.
_CONSECUTIVE, _HALVES, _HALF_UNIFORM, _SCATTERED = range(4)


class _Place:
    """Where the mask's lanes access memory: `addrs` (a vector of host addresses, or of
    offsets into the shared window when `shared`) plus `offset` bytes; `key` names the
    base (register or variable) it was read from, for _classify's memo."""

    __slots__ = ("addrs", "shared", "offset", "key")

    def __init__(self, addrs, shared: bool, offset: int, key):
        self.addrs, self.shared, self.offset, self.key = addrs, shared, offset, key

    def moved(self, step: int) -> _Place:
        return _Place(self.addrs, self.shared, self.offset + step, self.key)


def _vector_access(fl: GangLowering, inst: ir.Instruction):
    """(address operand, space, element type, count) of a ld or st that _access lowers lane
    by lane (not a parameter, not a load every lane makes alike), else None."""
    if inst.opcode not in ("ld", "st"):
        return None
    space = state_space(inst)
    if inst.opcode == "ld":
        defs = uses_and_defs(inst)[1]
        if space == "param" or (defs and defs <= fl.uniform):
            return None
    operand = inst.operands[1] if inst.opcode == "ld" else inst.operands[0]
    if not isinstance(operand, ir.Address):
        return None
    return operand, space, instruction_type(inst), vector_count(inst)


def _access_groups(fl: GangLowering, instructions) -> tuple[dict, dict]:
    """The unguarded accesses of a segment that read the same base (before it is written
    again) with elements of one size: id(instruction) -> group, and group -> (lowest,
    highest) offset. Their lanes' addresses differ by constants only, so one range check
    covers the group (_group_check)."""
    written: dict = {}
    group_of, span = {}, {}
    for inst in instructions:
        found = _vector_access(fl, inst) if inst.guard is None else None
        if found is not None:
            operand, space, t, count = found
            base = id(operand.base)
            group = ((base, space), t.size, written.get(base, 0))
            group_of[id(inst)] = group
            low, high = span.get(group, (operand.offset, operand.offset))
            span[group] = (min(low, operand.offset),
                           max(high, operand.offset + (count - 1) * t.size))
        for reg in may_write(inst):
            written[id(reg)] = written.get(id(reg), 0) + 1
    return group_of, span


def _place(fl: GangLowering, operand, space) -> _Place:
    """The _Place of a memory operand; the base's lanes are read once per segment while the
    base register is not written."""
    if not isinstance(operand, ir.Address):
        raise GangUnsupported("a memory operand that is not [address]")
    key = (id(operand.base), space)
    addrs = fl.places.get(key)
    if addrs is None:
        host, offsets = _addresses(fl, ir.Address(operand.base, 0), space)
        addrs = host if offsets is None else offsets
        fl.places[key] = addrs
    return _Place(addrs, space == "shared", operand.offset, key)


def _classify(fl: GangLowering, place: _Place, size: int):
    """(kind, start0, start1, low, high) of the mask's lanes' accesses of `size` bytes at
    place.addrs (before place.offset): the kind (_CONSECUTIVE...), the lane-0 address of
    each half warp (kind _HALF_UNIFORM: each half's one address), and the range the active
    lanes touch. Computed once per base, size and mask in a segment (a tile loop reads
    As[ty][k] for 16 values of k: one classification)."""
    memo = (place.key, size, id(fl.mask))
    if memo in fl.patterns:
        return fl.patterns[memo]
    b = fl.b
    llfn = fl.llfn
    addrs = place.addrs
    et = addrs.type.element
    bits = fl.bits(fl.mask)
    entry = b.block
    run, halves_test, uniform_test, scattered, done = (llfn.append_basic_block(n) for n in (
        "classify", "classify_halves", "classify_uniform", "classify_scattered",
        "classified"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", bits, I32(0)), run, done)
    incoming = [(I32(_SCATTERED), ll.Constant(et, 0), ll.Constant(et, 0), ll.Constant(et, 0),
                 ll.Constant(et, 0), entry)]
    b.position_at_end(run)
    contiguous, s = _pattern(fl, addrs, size)
    first = b.zext(fl.cttz(bits), et)
    after = b.zext(b.sub(I32(W), fl.ctlz(bits)), et)
    incoming.append((I32(_CONSECUTIVE), s, b.add(s, ll.Constant(et, size * _HALF)),
                     b.add(s, b.mul(first, ll.Constant(et, size))),
                     b.add(s, b.mul(after, ll.Constant(et, size))), b.block))
    low_idle = ll.IRBuilder.icmp_unsigned(b, "==", b.and_(bits, I32(0xFFFF)), I32(0))
    high_idle = ll.IRBuilder.icmp_unsigned(b, "==", b.lshr(bits, I32(_HALF)), I32(0))
    ll.IRBuilder.cbranch(b, contiguous, done, halves_test)

    def both(starts):
        # an idle half's start is not an address: it takes the other half's
        h0, h1 = starts
        h0, h1 = (ll.IRBuilder.select(b, low_idle, h1, h0),
                  ll.IRBuilder.select(b, high_idle, h0, h1))
        less = ll.IRBuilder.icmp_unsigned(b, "<", h0, h1)
        return h0, h1, ll.IRBuilder.select(b, less, h0, h1), ll.IRBuilder.select(b, less, h1, h0)
    b.position_at_end(halves_test)
    halves, starts = _halves(fl, addrs, size)
    h0, h1, low, high = both(starts)
    incoming.append((I32(_HALVES), h0, h1, low, b.add(high, ll.Constant(et, size * _HALF)),
                     b.block))
    ll.IRBuilder.cbranch(b, halves, done, uniform_test)
    b.position_at_end(uniform_test)
    same, starts = _halves(fl, addrs, 0)
    u0, u1, low, high = both(starts)
    incoming.append((I32(_HALF_UNIFORM), u0, u1, low, b.add(high, ll.Constant(et, size)),
                     b.block))
    ll.IRBuilder.cbranch(b, same, done, scattered)
    b.position_at_end(scattered)
    if place.shared:        # (_check_place tests scattered shared lanes one by one)
        low = high = ll.Constant(et, 0)
    else:
        ones = ll.Constant(et, (1 << et.width) - 1)
        low = fl.reduce("umin", ll.IRBuilder.select(b, fl.mask, addrs, b.splat(ones)))
        high = b.add(fl.reduce("umax", ll.IRBuilder.select(
            b, fl.mask, addrs, b.splat(ll.Constant(et, 0)))), ll.Constant(et, size))
    incoming.append((I32(_SCATTERED), low, low, low, high, b.block))
    b.branch(done)
    b.position_at_end(done)
    result = []
    for i, typ in enumerate((I32, et, et, et, et)):
        phi = ll.IRBuilder.phi(b, typ)
        for values in incoming:
            phi.add_incoming(values[i], values[5])
        result.append(phi)
    fl.patterns[memo] = tuple(result)
    return fl.patterns[memo]


def _check_place(fl: GangLowering, place: _Place, size: int, write: bool, kind, low, high):
    """Check the mask's lanes' accesses, which lie in [low, high) (shared: offsets into the
    window): shared memory by one range test, with the exact per-lane test when that fails
    or the lanes are scattered; the rest by _check_access (the per-site cache, then the
    allocation table)."""
    b = fl.b
    et = place.addrs.type.element
    addrs = b.add(place.addrs, b.splat(ll.Constant(et, place.offset))) if place.offset \
        else place.addrs
    if not place.shared:
        _check_access(fl, addrs, None, size, write, span=(low, high))
        return
    limit = fl.target._ctx_field(fl, "total_smem")
    if et.width == 64:
        limit = b.zext(limit, I64)
    inside = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", high, limit),
                    ll.IRBuilder.icmp_unsigned(b, "<=", low, high))
    inside = b.and_(inside, ll.IRBuilder.icmp_unsigned(b, "!=", kind, I32(_SCATTERED)))
    exact, ok = fl.llfn.append_basic_block("shared_exact"), fl.llfn.append_basic_block(
        "shared_inside")
    ll.IRBuilder.cbranch(b, inside, ok, exact)
    b.position_at_end(exact)
    if et.width == 32:
        _check_shared32(fl, addrs, size, write)
    else:
        window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
        _check_access(fl, b.add(addrs, b.splat(window)), addrs, size, write)
    b.branch(ok)
    b.position_at_end(ok)


def _group_check(fl: GangLowering, place: _Place, size: int, low, high):
    """i1: whether every access of the current instruction's group (_access_groups) by the
    mask's lanes lies inside memory the kernel may touch, checked once where the group's
    first access classifies its lanes (so it holds for the rest of the segment); None for
    an access in no group. A false check makes each access check itself (the exact fault,
    in program order). Global accesses also prefetch here, for the whole group."""
    group = fl.group_of.get(id(fl.inst))
    if group is None:
        return None
    memo = (group, id(fl.mask))
    if memo in fl.group_ok:
        return fl.group_ok[memo], None
    b = fl.b
    first, last = fl.group_span[group]
    et = place.addrs.type.element
    if place.shared:       # lane by lane in one vector test: exact however they lie
        limit = fl.target._ctx_field(fl, "total_smem")
        if et.width == 64:
            limit = b.zext(limit, I64)
        start = b.add(place.addrs, b.splat(ll.Constant(et, first))) if first else place.addrs
        end = b.add(place.addrs, b.splat(ll.Constant(et, last + size)))
        good = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", start, end),
                      ll.IRBuilder.icmp_unsigned(b, "<=", end, b.splat(limit)))
        bad = fl.bits(b.and_(fl.mask, b.not_(good)))
        ok = ll.IRBuilder.icmp_unsigned(b, "==", bad, I32(0))
        fl.group_ok[memo] = ok
        return ok, None
    low = b.add(low, ll.Constant(et, first))
    high = b.add(high, ll.Constant(et, last))
    ordered = ll.IRBuilder.icmp_unsigned(b, "<=", low, high)
    from ptxport.codegen.targets.cpu.module import _check_function

    site = fl.plan.check_sites
    fl.plan.check_sites += 1
    slot = b.gep(fl.target._ctx_field(fl, "site_cache", typ=PTR), [I64(16 * site)],
                 source_etype=I8)
    hit = b.and_(ordered, b.and_(
        ll.IRBuilder.icmp_unsigned(b, ">=", low, b.load(slot, typ=I64)),
        ll.IRBuilder.icmp_unsigned(b, "<=", high, b.load(
            b.gep(slot, [I64(8)], source_etype=I8), typ=I64))))
    idle = ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(fl.mask), I32(0))
    before = b.block
    search, done = fl.llfn.append_basic_block("group_search"), fl.llfn.append_basic_block(
        "group_checked")
    ll.IRBuilder.cbranch(b, b.or_(hit, idle), done, search)
    b.position_at_end(search)
    found = ll.IRBuilder.call(b, _check_function(fl.llfn.module),
                              [fl.llfn.args[0], low, b.sub(high, low), slot])
    searched = b.block
    b.branch(done)
    b.position_at_end(done)
    ok = ll.IRBuilder.phi(b, I1)
    ok.add_incoming(I1(1), before)
    ok.add_incoming(found, searched)
    fl.group_ok[memo] = ok
    return ok, low


_AHEAD = 3      # how many strides ahead _prefetch fetches
_NEAR = 1 << 26


def _prefetch(fl: GangLowering, low, span: int) -> None:
    """A software stride prefetcher for one access site: the warp's accesses there move by
    a stride (a grid-stride loop moves by gridDim * blockDim elements, too far for the
    hardware's prefetchers; and from one warp or block to the next); fetch the lines of the
    `span` bytes from `low` _AHEAD strides on. The stride is the last move at this site: in
    this warp's call when it has been here before (a loop), else by the warps this worker
    ran before in this launch (the site's last address is also kept in a slot of the
    worker's site cache, zero at each launch). A wrong guess costs a prefetch, never a
    fault."""
    b = fl.b
    mine = fl.entry_alloca(I64, "last_address")
    with b.goto_block(fl.entry):
        b.position_after(mine)
        ll.IRBuilder.store(b, I64(0), mine)
    site = fl.plan.check_sites
    fl.plan.check_sites += 1
    shared = b.gep(fl.target._ctx_field(fl, "site_cache", typ=PTR), [I64(16 * site)],
                   source_etype=I8)
    own = b.load(mine)
    before = ll.IRBuilder.select(b, ll.IRBuilder.icmp_unsigned(b, "!=", own, I64(0)), own,
                                 b.load(shared, typ=I64))
    step = b.sub(low, before)
    b.store(low, mine)
    b.store(low, shared)
    # only after a first access here in this launch, and for strides under 64 MiB
    near = ll.IRBuilder.icmp_unsigned(b, "<", b.add(step, I64(_NEAR)), I64(2 * _NEAR))
    fetch, done = fl.llfn.append_basic_block("prefetch"), fl.llfn.append_basic_block(
        "prefetched")
    ll.IRBuilder.cbranch(b, b.and_(near, ll.IRBuilder.icmp_unsigned(b, "!=", before, I64(0))),
                         fetch, done)
    b.position_at_end(fetch)
    ahead = b.add(low, b.mul(step, I64(_AHEAD)))
    fn = _declare(fl.llfn.module, "llvm.prefetch.p0", ll.VoidType(), [PTR, I32, I32, I32])
    for line in range(0, min(span, 256), 64):
        ll.IRBuilder.call(b, fn, [ll.IRBuilder.inttoptr(b, b.add(ahead, I64(line)), PTR),
                                  I32(0), I32(3), I32(1)])
    b.branch(done)
    b.position_at_end(done)


def _access(fl: GangLowering, place: _Place, t: Type, value=None):
    """Load (value None) or store `value` of type t for the mask's lanes at `place`: one
    masked vector access when the lanes' addresses are consecutive, two half-warp ones when
    each half's are (a 16-wide block), two scalar loads when each half reads one address,
    else a gather or scatter."""
    b = fl.b
    llmod = fl.llfn.module
    element = value_type(t)
    vt = _vec(element)
    ht = ll.VectorType(element, _HALF)
    name = _type_name(element)
    load = value is None
    kind, s0, s1, low, high = _classify(fl, place, t.size)
    et = place.addrs.type.element
    offset = ll.Constant(et, place.offset)
    checked, group_low = _group_check(fl, place, t.size, low, high) if fl.guard is None \
        else (None, None)
    active, vector_block, halves_block, uniform_block, lanes_block, done = (
        fl.llfn.append_basic_block(n) for n in (
            "access_active", "access_vector", "access_halves", "access_uniform",
            "access_gather", "access_done"))
    skipped = b.block          # no lane active (a guard false everywhere): no access at all
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         active, done)
    b.position_at_end(active)
    if checked is None:
        _check_place(fl, place, t.size, not load, kind, b.add(low, offset),
                     b.add(high, offset))
        if not place.shared:
            _prefetch(fl, b.add(low, offset), t.size * W)
    else:       # the group's check failed: this access on its own
        if group_low is not None:       # the group's first global access
            _prefetch(fl, group_low, 256)
        exact, ok = fl.llfn.append_basic_block("access_exact"), fl.llfn.append_basic_block(
            "access_checked")
        ll.IRBuilder.cbranch(b, checked, ok, exact)
        b.position_at_end(exact)
        _check_place(fl, place, t.size, not load, kind, b.add(low, offset),
                     b.add(high, offset))
        b.branch(ok)
        b.position_at_end(ok)
    if place.shared:
        window = fl.target.space_base(fl, "shared")

        def pointer(at):
            at = b.add(at, offset)
            return ll.IRBuilder.gep(b, window, [b.sext(at, I64) if et.width == 32 else at],
                                    source_etype=I8)
    else:
        def pointer(at):
            return ll.IRBuilder.inttoptr(b, b.add(at, offset), PTR)
    switch = ll.IRBuilder.switch(b, kind, lanes_block)
    switch.add_case(I32(_CONSECUTIVE), vector_block)
    switch.add_case(I32(_HALVES), halves_block)
    if load:
        switch.add_case(I32(_HALF_UNIFORM), uniform_block)
    incoming = []
    # consecutive: one masked vector access
    b.position_at_end(vector_block)
    if load:
        fn = _declare(llmod, f"llvm.masked.load.v{W}{name}.p0", vt, [PTR, I32, _vec(I1), vt])
        incoming.append((ll.IRBuilder.call(b, fn, [pointer(s0), I32(t.size), fl.mask,
                                                   ll.Constant(vt, None)]), b.block))
    else:
        fn = _declare(llmod, f"llvm.masked.store.v{W}{name}.p0", ll.VoidType(),
                      [vt, PTR, I32, _vec(I1)])
        ll.IRBuilder.call(b, fn, [value, pointer(s0), I32(t.size), fl.mask])
    b.branch(done)
    # each half warp consecutive: two masked half-vector accesses
    b.position_at_end(halves_block)
    masks = [_half_mask(fl, 0), _half_mask(fl, 1)]
    if load:
        fn = _declare(llmod, f"llvm.masked.load.v{_HALF}{name}.p0", ht,
                      [PTR, I32, ll.VectorType(I1, _HALF), ht])
        parts = [ll.IRBuilder.call(b, fn, [pointer(h), I32(t.size), m, ll.Constant(ht, None)])
                 for h, m in ((s0, masks[0]), (s1, masks[1]))]
        incoming.append((ll.IRBuilder.shuffle_vector(
            b, parts[0], parts[1], ll.Constant(ll.VectorType(I32, W), list(range(W)))),
            b.block))
    else:
        fn = _declare(llmod, f"llvm.masked.store.v{_HALF}{name}.p0", ll.VoidType(),
                      [ht, PTR, I32, ll.VectorType(I1, _HALF)])
        for half, (h, m) in enumerate(((s0, masks[0]), (s1, masks[1]))):
            part = ll.IRBuilder.shuffle_vector(b, value, ll.Constant(vt, None), ll.Constant(
                ll.VectorType(I32, _HALF), list(range(_HALF * half, _HALF * half + _HALF))))
            ll.IRBuilder.call(b, fn, [part, pointer(h), I32(t.size), m])
    b.branch(done)
    # each half warp reads one address (a row's element in a 16-wide block): two loads
    b.position_at_end(uniform_block)
    if load:
        x0, x1 = (ll.IRBuilder.load(b, pointer(a), typ=element, align=t.size) for a in (s0, s1))
        incoming.append((ll.IRBuilder.select(b, _LOW_HALF, b.splat(x0), b.splat(x1)),
                         b.block))
        b.branch(done)
    else:
        b.unreachable()
    # anything else: lane by lane in one gather or scatter
    b.position_at_end(lanes_block)
    lanes = b.add(place.addrs, b.splat(offset)) if place.offset else place.addrs
    if place.shared:
        # (checked offsets are below 2^31: sign-extended, x86 gathers them as dwords)
        pointers = ll.IRBuilder.gep(b, window, [lanes if et.width == 64 else b.sext(
            lanes, _vec(I64))], source_etype=I8)
        pointers.type = _vec(PTR)
    else:
        pointers = b.inttoptr(lanes, _vec(PTR))
    if load:
        fn = _declare(llmod, f"llvm.masked.gather.v{W}{name}.v{W}p0", vt,
                      [_vec(PTR), I32, _vec(I1), vt])
        incoming.append((ll.IRBuilder.call(b, fn, [pointers, I32(t.size), fl.mask,
                                                   ll.Constant(vt, None)]), b.block))
    else:
        fn = _declare(llmod, f"llvm.masked.scatter.v{W}{name}.v{W}p0", ll.VoidType(),
                      [vt, _vec(PTR), I32, _vec(I1)])
        ll.IRBuilder.call(b, fn, [value, pointers, I32(t.size), fl.mask])
    b.branch(done)
    b.position_at_end(done)
    if load:
        result = ll.IRBuilder.phi(b, vt)
        for v, block in incoming:
            result.add_incoming(v, block)
        result.add_incoming(ll.Constant(vt, None), skipped)
        return result
    return None


def _uniform_load(fl: GangLowering, operand, space, t: Type, count: int) -> list:
    """The `count` elements of type t that every lane reads at one address (the destination
    is uniform, so cpu_uniform.py found the address uniform): checked once, loaded once."""
    b = fl.b
    element = value_type(t)
    host, offsets = _addresses(fl, operand, space, lanes=False)
    size = t.size * count
    skipped = b.block
    active, done = fl.llfn.append_basic_block("load_once"), fl.llfn.append_basic_block(
        "loaded_once")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         active, done)
    b.position_at_end(active)
    if host is None:
        _check_shared32(fl, b.splat(offsets), size, False)
        pointer = ll.IRBuilder.gep(b, fl.target.space_base(fl, "shared"),
                                   [b.sext(offsets, I64)], source_etype=I8)
    else:
        _check_access(fl, b.splat(host), None if offsets is None else b.splat(offsets), size,
                      False, span=(host, b.add(host, I64(size))))
        pointer = ll.IRBuilder.inttoptr(b, host, PTR)
    values = [ll.IRBuilder.load(b, b.gep(pointer, [I64(i * t.size)], source_etype=I8),
                                typ=element, align=t.size) for i in range(count)]
    loaded = b.block
    b.branch(done)
    b.position_at_end(done)
    out = []
    for v in values:
        phi = ll.IRBuilder.phi(b, element)
        phi.add_incoming(v, loaded)
        phi.add_incoming(ll.Constant(element, None), skipped)
        out.append(phi)
    return out


def _ld(fl: GangLowering, inst: ir.Instruction) -> None:
    t = instruction_type(inst)
    count = vector_count(inst)
    space = state_space(inst)
    operand = inst.operands[1]
    if _vector_access(fl, inst) is not None:
        place = _place(fl, operand, space)
        values = [_access(fl, place.moved(i * t.size), t) for i in range(count)]
    elif space == "param":      # a kernel parameter: the same for every lane
        pointer = FunctionLowering.pointer(fl, operand, "param", t.size * count)
        values = [ll.IRBuilder.load(
            fl.b, fl.b.gep(pointer, [I64(i * t.size)], source_etype=I8), typ=value_type(t),
            align=t.size) for i in range(count)]
    else:       # every lane loads alike (or not an [address]: refused there)
        values = _uniform_load(fl, operand, space, t, count)
    if count == 1 and not isinstance(inst.operands[0], ir.VectorValue):
        fl.write(inst.operands[0], values[0], t)
    else:
        fl.write_vector(inst.operands[0], values, t)


def _st(fl: GangLowering, inst: ir.Instruction) -> None:
    t = instruction_type(inst)
    count = vector_count(inst)
    space = state_space(inst)
    place = _place(fl, inst.operands[0], space)
    if count == 1 and not isinstance(inst.operands[1], ir.VectorValue):
        values = [fl.read(inst.operands[1], t)]
    else:
        values = fl.read_vector(inst.operands[1], t, count)
    for i, v in enumerate(values):
        _access(fl, place.moved(i * t.size), t,
                fl.convert(v, t, t) if _is_vec(v) else fl.b.splat(v))


def _atom(fl: GangLowering, inst: ir.Instruction) -> None:
    """atom/red{.space}.op.type: lane after lane (in lane order), each a real atomic
    instruction on its own address (shared memory: a plain read-modify-write), checked
    like any access."""
    b = fl.b
    llfn = fl.llfn
    t = instruction_type(inst)
    op = inst.spec.get("op")
    space = state_space(inst)
    is_red = inst.opcode == "red"
    operands = list(inst.operands)
    dest = None if is_red else operands.pop(0)
    if not isinstance(dest, ir.Register) or dest not in fl.read_somewhere:
        dest = None         # the old values are never read: an atom is a red
    host, offsets = _addresses(fl, operands[0], space)
    if host is None:
        window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
        offsets = b.zext(offsets, _vec(I64))
        host = b.add(b.splat(window), offsets)
    value = fl.read_lanes(operands[1], t)
    swap = fl.read_lanes(operands[2], t) if op == "cas" else None
    element = value_type(t)
    is_float = t.kind == "float"
    if is_float and op not in ("add", "exch", "min", "max"):
        raise GangUnsupported(f"{inst.spec.text}: float atomics other than add/exch/min/max")
    if is_float and op in ("min", "max"):
        raise GangUnsupported(f"{inst.spec.text}: float atomic min/max")
    # the lanes' operands go to memory once; the loop visits the mask's lanes by their bits
    results = fl.shuffle_array(element)
    addresses = fl.entry_alloca(ll.ArrayType(I64, W), "atom_addresses", 64)
    values = fl.entry_alloca(ll.ArrayType(element, W), "atom_values", 64)
    swaps = fl.entry_alloca(ll.ArrayType(element, W), "atom_swaps", 64) if swap else None
    start, head, run, done = (llfn.append_basic_block(n) for n in (
        "atom_start", "atom_head", "atom_run", "atom_done"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         start, done)
    b.position_at_end(start)
    _check_access(fl, host, offsets, t.size, True)
    for array, lanes in ((addresses, host), (values, value), (swaps, swap)):
        if array is not None:
            b.store(lanes, array, align=64)
    lanes_to_do = fl.bits(fl.mask)
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    todo = ll.IRBuilder.phi(b, I32)
    todo.add_incoming(lanes_to_do, entry)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", todo, I32(0)), run, done)
    b.position_at_end(run)
    i = fl.cttz(todo)
    todo.add_incoming(b.and_(todo, b.sub(todo, I32(1))), run)

    def lane_of(array, typ):
        return b.load(b.gep(array, [b.zext(i, I64)], source_etype=typ), typ=typ)
    pointer = ll.IRBuilder.inttoptr(b, lane_of(addresses, I64), PTR)
    x = lane_of(values, element)
    y = lane_of(swaps, element) if swap else None
    if space == "shared":
        # A block's shared memory is only ever touched by the host thread running the block
        # (its warps take turns), so a plain read-modify-write is atomic here.
        old = ll.IRBuilder.load(b, pointer, typ=element, align=t.size)
        ll.IRBuilder.store(b, _combine(b, op, t, old, x, y), pointer, align=t.size)
    elif op == "cas":
        pair = ll.IRBuilder.cmpxchg(b, pointer, x, y, "monotonic", "monotonic")
        old = ll.IRBuilder.extract_value(b, pair, 0)
    else:
        rmw = {"add": "fadd" if is_float else "add", "exch": "xchg", "and": "and", "or": "or",
               "xor": "xor", "min": "min" if t.kind == "signed" else "umin",
               "max": "max" if t.kind == "signed" else "umax"}[op]
        old = ll.IRBuilder.atomic_rmw(b, rmw, pointer, x, "monotonic")
    if dest is not None:
        b.store(old, b.gep(results, [b.zext(i, I64)], source_etype=element))
    b.branch(head)
    b.position_at_end(done)
    if dest is not None:
        fl.write(dest, b.load(results, typ=_vec(element)), t)


def _combine(b: ll.IRBuilder, op: str, t: Type, old, x, y):
    """The value an atomic `op` leaves where `old` was (cas: y where old equals x)."""
    if op == "exch":
        return x
    if op == "cas":
        return ll.IRBuilder.select(b, ll.IRBuilder.icmp_unsigned(b, "==", old, x), y, old)
    if op == "add":
        return ll.IRBuilder.fadd(b, old, x) if t.kind == "float" else ll.IRBuilder.add(b, old, x)
    if op in ("and", "or", "xor"):
        return getattr(ll.IRBuilder, {"and": "and_", "or": "or_", "xor": "xor"}[op])(b, old, x)
    compare = ll.IRBuilder.icmp_signed if t.kind == "signed" else ll.IRBuilder.icmp_unsigned
    return ll.IRBuilder.select(b, compare(b, "<" if op == "min" else ">", x, old), x, old)


_GANG_LOWERINGS = {"ld": _ld, "ldu": _ld, "st": _st, "atom": _atom, "red": _atom, "bra": _bra,
                   "ret": _ret, "exit": _ret, "shfl": _shfl, "vote": _vote,
                   "activemask": _activemask}


def _bar(fl: GangLowering, inst: ir.Instruction) -> None:
    if inst.spec.has("warp"):
        _warp_barrier(fl, inst)
    else:
        _barrier(fl, inst)


_GANG_LOWERINGS["bar"] = _GANG_LOWERINGS["barrier"] = _bar


# --- the gang function and its block loop ------------------------------------------------------

def _saved_registers(kernel: ir.Function) -> list[ir.Register]:
    """Registers live where a warp may resume after returning: after barriers, and at warp
    operations where lanes park."""
    points = {id(i) for i in kernel.instructions() if _is_barrier(i) or _is_warp_op(i)}
    if not points:
        return []
    live = live_after(kernel, points)
    saved: set = set()
    for inst in kernel.instructions():
        if id(inst) in points:
            saved |= live[id(inst)]
            if _is_warp_op(inst):
                saved |= uses_and_defs(inst)[0]
    return sorted(saved, key=lambda r: r.name)


def _frame_layout(fl: GangLowering, registers) -> dict[str, int]:
    offsets, at = {}, _REGISTERS
    for reg in registers:
        typ = fl.storage_type(reg)
        element = typ.element if isinstance(typ, ll.ArrayType) else typ
        if reg in fl.uniform:       # one scalar (8 bytes hold any)
            offsets[reg.name] = at
            at += 8 * (reg.vector or 1)
            continue
        width = element.element.width if isinstance(element.element, ll.IntType) else \
            {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(element.element)]
        size = max(width // 8, 1) * W * (reg.vector or 1) if width > 1 else 4 * (reg.vector or 1)
        at = (at + 127) // 128 * 128
        offsets[reg.name] = at
        at += size
    offsets[""] = (at + 127) // 128 * 128
    return offsets


def _constant_registers(kernel: ir.Function) -> dict:
    """Registers whose only write is an unguarded mov of an integer immediate -> its value."""
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(reg, []).append(inst)
    found = {}
    for reg, insts in writes.items():
        if len(insts) != 1:
            continue
        inst = insts[0]
        if inst.opcode == "mov" and inst.guard is None and len(inst.operands) == 2 \
                and inst.operands[0] is reg and isinstance(inst.operands[1], IntImm):
            found[reg] = inst.operands[1].value
    return found


def _lower_gang(module: ir.Module, kernel: ir.Function, gang: ll.Function, target, plan,
                block: tuple[int, int, int]):
    fl = GangLowering(module, kernel, gang, target, plan, block)
    b = fl.b
    ctx, frame, warp, nthreads, start = gang.args
    fl.declare_registers()
    vi32 = _vec(I32)
    fl.pc_slot = fl.entry_alloca(vi32, "pc")
    fl.mask_slot = fl.entry_alloca(_vec(I1), "mask")
    fl.parked_slot = fl.entry_alloca(I32, "parked")
    fl.barrier_slot = fl.entry_alloca(I32, "at_barrier")
    fl.retry_slot = fl.entry_alloca(I32, "alive_at_retry")
    fl.others_slot = fl.entry_alloca(I32, "others")
    fl.others_min_slot = fl.entry_alloca(I32, "others_from")
    fl.shuffle_slot = fl.entry_alloca(ll.ArrayType(I32, W), "shuffle", 64)
    arrays: dict[str, ll.Value] = {}

    def shuffle_array(element):
        key = str(element)
        if key not in arrays:
            arrays[key] = fl.entry_alloca(ll.ArrayType(element, W), f"lanes_{key}", 64)
        return arrays[key]

    fl.shuffle_array = shuffle_array
    fl.exit_pcs = ll.Constant(vi32, [I32(EXIT_PC)] * W)
    from ptxport.codegen.targets.cpu.module import CTX
    from ptxport.codegen.targets.cpu.stop import STOPPED, poll_stop

    fl.scratch_lane = b.gep(ctx, [I64(_SCRATCH_LANE)], source_etype=I8)
    stop_word = b.load(b.gep(ctx, [I64(CTX.fields["stop"])], source_etype=I8), typ=PTR)
    assert CTX.fields["scratch"] == _SCRATCH_LANE
    # lane numbers, thread indices
    fl.lane = ll.Constant(vi32, [I32(i) for i in range(W)])
    fl.warp_number = warp
    linear = b.add(b.splat(b.mul(warp, I32(W))), fl.lane)
    # thread indices: divisions by constants (shifts for powers of two), a scalar where the
    # warp's lanes hold one value (computed where read: cheaper than keeping them)
    nthreads = I32(block[0] * block[1] * block[2])
    first = b.mul(warp, I32(W))
    alike = warp_uniform_indices(block)
    tid = []
    for axis, (below, size) in enumerate(((1, block[0]), (block[0], block[1]),
                                           (block[0] * block[1], block[2]))):
        of = first if "xyz"[axis] in alike else linear
        index = ll.IRBuilder.udiv(b, of, b.splat(I32(below)) if _is_vec(of) else I32(below))
        if axis < 2:
            index = ll.IRBuilder.urem(b, index, b.splat(I32(size)) if _is_vec(index)
                                      else I32(size))
        tid.append(index)

    def frame_field(offset, typ=I32):
        pointer = ll.IRBuilder.gep(b, frame, [I64(offset)], source_etype=I8)
        pointer.type = ll.PointerType(typ)
        return pointer

    fl.frame_field, fl.thread_index = frame_field, tid.__getitem__
    live = ll.IRBuilder.icmp_unsigned(b, "<", linear, b.splat(nthreads))

    segments = _segments(kernel)
    for s in segments:
        s.llblock = gang.append_basic_block(f"seg{s.number}")
    fl.first_segment = {}
    fl.segment_at = {}
    after: dict[int, _Segment] = {}
    for i, s in enumerate(segments):
        fl.first_segment.setdefault(id(s.block), s)
        if s.start < s.end:
            fl.segment_at[id(s.block.instructions[s.start])] = s
            after[id(s.block.instructions[s.end - 1])] = segments[i + 1] if i + 1 < len(
                segments) else None
    exit_segment = _Segment(len(segments), None, 0, 0)
    exit_segment.llblock = gang.append_basic_block("fall_off")

    def next_segment(inst):
        found = after.get(id(inst))
        if found is None or found.block is None:
            return exit_segment
        return found

    fl.next_segment = next_segment
    # Registers live where a warp resumes live in its frame (128-byte aligned, as the vector
    # loads LLVM makes of them assume): a warp leaving at a barrier copies nothing.
    registers = _saved_registers(kernel)
    starts = live_before(kernel, {(id(s.block), s.start) for s in segments})
    fl.crossing = set().union(*starts.values())
    offsets = _frame_layout(fl, registers)
    fl.frame_bytes = offsets[""]
    with b.goto_entry_block():
        b.position_at_start(fl.entry)
        for reg in registers:
            slot = ll.IRBuilder.gep(b, frame, [I64(offsets[reg.name])], source_etype=I8)
            slot.type = ll.PointerType(fl.storage_type(reg))
            fl.registers[id(reg)] = slot

    fresh, resume, dispatch = (gang.append_basic_block(n) for n in ("fresh", "resume",
                                                                    "dispatch"))
    fl.dispatch = dispatch
    b.store(I32(0), fl.barrier_slot)
    b.store(I32(-1), fl.retry_slot)     # all 32 alive: none has exited, a retry cannot help
    b.cbranch(start, fresh, resume)
    b.position_at_end(fresh)
    b.store(I32(-1), fl.frame_field(_RESUME))
    b.store(ll.IRBuilder.select(b, live, b.splat(I32(0)), fl.exit_pcs), fl.pc_slot)
    b.store(I32(0), fl.parked_slot)
    b.branch(dispatch)
    b.position_at_end(resume)
    # all live lanes left together at one barrier (_barrier): straight back there
    at = b.load(fl.frame_field(_RESUME))
    fast, slow = gang.append_basic_block("resume_fast"), gang.append_basic_block(
        "resume_slow")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_signed(b, ">=", at, I32(0)), fast, slow)
    b.position_at_end(slow)
    b.store(b.load(frame_field(_PC, vi32), align=16), fl.pc_slot)
    b.store(b.load(frame_field(_PARKED)), fl.parked_slot)
    b.branch(dispatch)
    b.position_at_end(fast)
    b.store(I32(-1), fl.frame_field(_RESUME))
    lanes = fl.lanes(b.load(fl.frame_field(_RESUME_LANES)))
    b.store(ll.IRBuilder.select(b, lanes, b.splat(at), fl.exit_pcs), fl.pc_slot)
    b.store(I32(0), fl.parked_slot)
    b.store(lanes, fl.mask_slot)
    b.store(I32(0), fl.others_slot)
    b.store(I32(EXIT_PC), fl.others_min_slot)
    fl.resume_switch = ll.IRBuilder.switch(b, at, dispatch)
    fl.resumed_at = set()

    # the dispatcher: the lowest counter among the lanes that may run
    b.position_at_end(dispatch)
    pc = b.load(fl.pc_slot)
    parked = b.load(fl.parked_slot)
    waiting = b.load(fl.barrier_slot)
    alive = fl.bits(ll.IRBuilder.icmp_unsigned(b, "!=", pc, fl.exit_pcs))
    candidates = b.and_(alive, b.not_(b.or_(parked, waiting)))
    pick, stop = gang.append_basic_block("pick"), gang.append_basic_block("stop")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", candidates, I32(0)), stop, pick)
    b.position_at_end(pick)
    lowest = fl.reduce("umin", ll.IRBuilder.select(b, fl.lanes(candidates), pc, fl.exit_pcs))
    mask = b.and_(ll.IRBuilder.icmp_unsigned(b, "==", pc, b.splat(lowest)),
                  fl.lanes(b.not_(waiting)))
    b.store(mask, fl.mask_slot)
    b.store(b.and_(parked, b.not_(fl.bits(mask))), fl.parked_slot)
    others = b.and_(candidates, b.not_(fl.bits(mask)))
    b.store(others, fl.others_slot)
    b.store(fl.reduce("umin", ll.IRBuilder.select(b, fl.lanes(others), pc, fl.exit_pcs)),
            fl.others_min_slot)
    unreachable = gang.append_basic_block("bad_pc")
    switch = ll.IRBuilder.switch(b, lowest, unreachable)
    for s in segments:
        switch.add_case(I32(s.number), s.llblock)
    b.position_at_end(unreachable)
    b.unreachable()
    # no lane can go on: all exited, or waiting at a barrier (save and return), or stuck
    b.position_at_end(stop)
    at_barrier, not_barrier = gang.append_basic_block("at_barrier"), gang.append_basic_block(
        "not_barrier")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", waiting, I32(0)), at_barrier,
                         not_barrier)
    b.position_at_end(at_barrier)
    b.store(pc, frame_field(_PC, vi32), align=16)
    b.store(parked, frame_field(_PARKED))
    b.ret(I32(BARRIER))
    b.position_at_end(not_barrier)
    some_parked, done = gang.append_basic_block("some_parked"), gang.append_basic_block(
        "all_exited")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", parked, I32(0)), some_parked,
                         done)
    # Lanes parked at a warp operation for members that have exited since (a member that
    # returns before a shfl.sync does not take part): when lanes exited since the last such
    # retry, every parked lane tries its warp operation again; else they wait forever.
    b.position_at_end(some_parked)
    retry, stuck = gang.append_basic_block("retry"), gang.append_basic_block("stuck")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", alive, b.load(fl.retry_slot)),
                         retry, stuck)
    b.position_at_end(retry)
    b.store(alive, fl.retry_slot)
    b.store(I32(0), fl.parked_slot)
    b.branch(dispatch)
    b.position_at_end(stuck)
    b.store(fl.cttz(parked), fl.scratch_lane)
    b.ret(I32(DEADLOCK))
    b.position_at_end(done)
    b.ret(I32(-1))
    b.position_at_end(exit_segment.llblock)
    fl.mask = b.load(fl.mask_slot)
    _set_pc(fl, fl.mask, I32(EXIT_PC))
    b.branch(dispatch)

    # the segments: each twice, for all 32 lanes (the mask a constant: no selects, plain
    # vector loads and stores, lane 0 first) and for any other mask
    full = ll.Constant(_vec(I1), [I1(1)] * W)
    # every loop passes the first segment of a loop header: a launch asked to stop ends there
    looped = {fl.first_segment[h].number for h in loop_headers(kernel) if h in fl.first_segment}
    for i, s in enumerate(segments):
        b.position_at_end(s.llblock)
        if s.number in looped:
            stopping = gang.append_basic_block(f"seg{s.number}_stopping")
            going_on = gang.append_basic_block(f"seg{s.number}_going_on")
            poll_stop(fl, stop_word, stopping, going_on)
            b.position_at_end(stopping)
            b.ret(I32(STOPPED))
            b.position_at_end(going_on)
        mask = b.load(fl.mask_slot)
        copies = [(mask, b.block)]
        if _FULL_MASK_COPIES:
            whole, partial = (gang.append_basic_block(f"seg{s.number}_{n}")
                              for n in ("all", "some"))
            ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(
                b, "==", fl.bits(mask), I32(FULL)), whole, partial)
            copies = [(full, whole), (mask, partial)]
        for lanes, block in copies:
            b.position_at_end(block)
            fl.mask = lanes
            fl.forget_segment(s.block.instructions[s.start:s.end])
            for inst in s.block.instructions[s.start:s.end]:
                fl.lower_instruction(inst)
            if not b.block.is_terminated:
                following = segments[i + 1] if i + 1 < len(segments) else exit_segment
                if following.block is None:
                    _set_pc(fl, fl.mask, I32(EXIT_PC))
                    b.branch(dispatch)
                else:       # lanes may wait there already: meet them
                    _go(fl, following)
    return fl


def _build_run_blocks(llmod: ll.Module, gang: ll.Function, warp_frame: int,
                      block: tuple[int, int, int]) -> None:
    """i64 run_blocks(ctx, frames, frame_size, nthreads, first, count, status*): blocks
    first..first+count-1, each warp by warp in rounds until every warp has exited (a round
    ends when each warp has exited or waits at a barrier); -1, or (block << 32 | thread) of
    the lane that faulted or waits forever, its status in *status."""
    from ptxport.codegen.targets.cpu import module as cpu

    fn = ll.Function(llmod, ll.FunctionType(I64, [PTR, PTR, I64, I32, I64, I64, PTR]),
                     name="run_blocks")
    ctx, frames, _frame_size, nthreads, first, count, status_out = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    nthreads = I32(block[0] * block[1] * block[2])     # (the executor passes the same)
    warps = b.udiv(b.add(nthreads, I32(W - 1)), I32(W))
    names = ("round_head", "warp_head", "warp_body", "warp_run", "warp_next", "round_end",
             "failed")
    (round_head, warp_head, warp_body, warp_run, warp_next, round_end,
     failed) = (fn.append_basic_block(n) for n in names)
    n, block_body, block_next = cpu.open_block_loop(b, ctx, first, count)
    b.branch(round_head)
    b.position_at_end(round_head)
    fresh = b.phi(I1, "fresh")
    fresh.add_incoming(I1(1), block_body)
    b.branch(warp_head)
    b.position_at_end(warp_head)
    w = b.phi(I32, "w")
    waiting = b.phi(I1, "waiting")
    w.add_incoming(I32(0), round_head)
    waiting.add_incoming(I1(0), round_head)
    b.cbranch(b.icmp_unsigned("<", w, warps), warp_body, round_end)
    b.position_at_end(warp_body)
    frame = b.gep(frames, [b.mul(b.zext(w, I64), I64(warp_frame))], source_etype=I8)
    status_ptr = b.gep(frame, [I64(_STATUS)], source_etype=I8)
    runs = b.or_(fresh, b.icmp_signed("==", b.load(status_ptr, typ=I32), I32(BARRIER)))
    skip = b.block
    b.cbranch(runs, warp_run, warp_next)
    b.position_at_end(warp_run)
    result = b.call(gang, [ctx, frame, w, nthreads, fresh])
    b.store(result, status_ptr)
    at_barrier = b.icmp_signed("==", result, I32(BARRIER))
    ok = b.or_(b.icmp_signed("==", result, I32(-1)), at_barrier)
    waiting_after = b.or_(waiting, at_barrier)
    ran = b.block
    b.cbranch(ok, warp_next, failed)
    b.position_at_end(warp_next)
    now_waiting = b.phi(I1)
    now_waiting.add_incoming(waiting, skip)
    now_waiting.add_incoming(waiting_after, ran)
    w.add_incoming(b.add(w, I32(1)), warp_next)
    waiting.add_incoming(now_waiting, warp_next)
    b.branch(warp_head)
    b.position_at_end(round_end)
    fresh.add_incoming(I1(0), round_end)
    b.cbranch(waiting, round_head, block_next)
    b.position_at_end(failed)
    b.store(result, status_out)
    lane = b.load(b.gep(ctx, [I64(_SCRATCH_LANE)], source_etype=I8), typ=I32)
    thread = b.add(b.mul(w, I32(W)), lane)
    b.ret(b.or_(b.shl(n, I64(32)), b.zext(thread, I64)))


def build(module: ir.Module, kernel_name: str, block: tuple[int, int, int]):
    """(LLVM module, KernelPlan) of `kernel_name` as warp gangs for blocks of shape `block`
    (thread indices, block size and the lanes alike are then known when compiling), with
    the same `run_blocks` and `run_claimed_blocks` entry points as the scalar path's kernels
    without waits. Raises GangUnsupported (with the reason) for kernels this path does not
    take."""
    import llvmlite.binding as llvm

    from ptxport.codegen.targets.cpu import module as cpu
    from ptxport.codegen.targets.cpu import runtime_functions as cpu_runtime

    kernel = module.functions[kernel_name]
    reason = _refusal(module, kernel)
    if reason is not None:
        raise GangUnsupported(reason)
    llmod = ll.Module(name=f"ptxport.gang.{kernel_name}")
    llmod.triple = llvm.get_process_triple()
    plan = cpu._plan(module, kernel)
    plan.spills.clear()
    # (the module's other variables are in its storage, bound when the code is loaded; the
    # tables of function addresses the kernel does not name are left out of its code)
    globals_ = cpu._declare_globals(module, llmod)
    target = _gang_target_class()(module, llmod, plan, globals_, {})
    gang = ll.Function(llmod, ll.FunctionType(I32, [PTR, PTR, I32, I32, I1]), name="gang")
    gang.linkage = "internal"
    # inlined into run_blocks, its one caller: a warp leaving at a barrier and resuming is
    # then a jump, not a call with a prologue saving registers and a large frame
    gang.attributes.add("alwaysinline")
    # The warp's frame is reached through this argument alone (the kernel's memory is
    # elsewhere): LLVM may keep registers that live in it in machine registers meanwhile.
    gang.args[1].add_attribute("noalias")
    try:
        fl = _lower_gang(module, kernel, gang, target, plan, block)
    except (UnsupportedFeatureError, InternalError, AttributeError, TypeError, KeyError,
            ValueError) as e:
        raise GangUnsupported(f"{type(e).__name__}: {e}") from e
    per_thread = max(cpu.FRAME.size, (fl.frame_bytes + W - 1) // W)
    plan.frame_size = (per_thread + 15) // 16 * 16      # warp frames: multiples of 512
    plan.gang = True
    _build_run_blocks(llmod, gang, W * plan.frame_size, block)
    cpu.build_claiming(llmod, llmod.globals["run_blocks"], 4, "run_claimed_blocks")
    cpu_runtime.add_conversions(llmod)
    return llmod, plan


def check(module: ir.Module, kernel_name: str) -> None:
    """Raise GangUnsupported (with the reason) if the gang path does not take the kernel,
    found by lowering it for one warp-wide row of threads (what it refuses does not depend
    on the block shape; a shape whose code LLVM still rejects falls back at its launch)."""
    build(module, kernel_name, (W, 1, 1))
