"""Data movement (PTX ISA 9.7.9): mov, ld, ldu, st, cvta, prefetch, isspacep."""

from __future__ import annotations

from ptxport.codegen.lower import I8, I64, FunctionLowering, const_int, lowering, value_type
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import state_space
from ptxport.ir.types import TYPES, Type


def instruction_type(inst: ir.Instruction) -> Type:
    """The instruction's (last) type modifier: ld.global.v4.f32 -> f32."""
    return TYPES[inst.spec.types[-1]]


@lowering("mov")
def mov(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mov.type d, a;  also packing `mov.b64 d, {a, b}` and unpacking `mov.b64 {a, b}, d`
    (element 0 in the low bits)."""
    t = instruction_type(inst)
    dest, src = inst.operands
    if isinstance(src, ir.VectorValue):
        width = t.bits // len(src.elements)
        result = None
        for i, element in enumerate(src.elements):
            bits = fl.read(element, f"b{width}")
            bits = fl.b.zext(bits, value_type(TYPES[f"b{t.bits}"]))
            if i:
                bits = fl.b.shl(bits, bits.type(width * i))
            result = bits if result is None else fl.b.or_(result, bits)
        fl.write(dest, result, f"b{t.bits}")
    elif isinstance(dest, ir.VectorValue):
        width = t.bits // len(dest.elements)
        whole = fl.read(src, f"b{t.bits}")
        for i, element in enumerate(dest.elements):
            shifted = fl.b.lshr(whole, whole.type(width * i)) if i else whole
            fl.write(element, fl.b.trunc(shifted, value_type(TYPES[f"b{width}"])), f"b{width}")
    else:
        fl.write(dest, fl.read(src, t), t)


def vector_count(inst: ir.Instruction) -> int:
    vec = inst.spec.get("vec")
    return int(vec[1:]) if vec else 1


def _memory_type(t: Type):
    """Predicates are not stored in memory; everything else has its own width."""
    return value_type(t)


def _ordering(inst: ir.Instruction) -> str | None:
    """LLVM's atomic ordering for ld/st with memory semantics; volatile becomes monotonic,
    which keeps every access (what spin-waiting CUDA code relies on volatile for)."""
    sem = inst.spec.get("sem")
    if sem in (None, "weak"):
        return None
    if inst.opcode == "ld":
        return {"volatile": "monotonic", "relaxed": "monotonic", "acquire": "acquire",
                "mmio": "monotonic"}.get(sem)
    return {"volatile": "monotonic", "relaxed": "monotonic", "release": "release",
            "mmio": "monotonic"}.get(sem)


def _element_pointers(fl: FunctionLowering, pointer, t: Type, count: int) -> list:
    return [pointer if i == 0 else fl.b.gep(pointer, [const_int(I64, i * t.size)],
                                            source_etype=I8) for i in range(count)]


@lowering("ld", "ldu")
def ld(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """ld{.weak|.volatile|.relaxed.scope|.acquire.scope}{.space}{.cop}{.vec}.type d, [a];
    cache operators and eviction hints do not change the value loaded."""
    t = instruction_type(inst)
    count = vector_count(inst)
    pointer = fl.pointer(inst.operands[1], state_space(inst), t.size * count)
    ordering = _ordering(inst)
    values = []
    for p in _element_pointers(fl, pointer, t, count):
        if ordering is not None and t.bits in (8, 16, 32, 64):
            values.append(fl.b.load_atomic(p, ordering, t.size, typ=_memory_type(t)))
        else:
            values.append(fl.b.load(p, typ=_memory_type(t), align=t.size))
    if count == 1 and not isinstance(inst.operands[0], ir.VectorValue):
        fl.write(inst.operands[0], values[0], t)
    else:
        fl.write_vector(inst.operands[0], values, t)


@lowering("st")
def st(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """st{.sem}{.space}{.cop}{.vec}.type [a], b;"""
    t = instruction_type(inst)
    count = vector_count(inst)
    pointer = fl.pointer(inst.operands[0], state_space(inst), t.size * count, write=True)
    source = inst.operands[1]
    if count == 1 and not isinstance(source, ir.VectorValue):
        values = [fl.read(source, t)]
    else:
        values = fl.read_vector(source, t, count)
    ordering = _ordering(inst)
    for p, v in zip(_element_pointers(fl, pointer, t, count), values, strict=True):
        if ordering is not None and t.bits in (8, 16, 32, 64):
            fl.store_atomic(v, p, ordering, t.size)
        else:
            fl.b.store(v, p, align=t.size)


@lowering("cvta")
def cvta(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """cvta.space.size d, a (to generic) and cvta.to.space.size d, a (from generic)."""
    t = instruction_type(inst)
    space = state_space(inst)
    value = fl.read(inst.operands[1], t)
    base = fl.target.space_base(fl, space)
    if base is not None:
        window = fl.b.ptrtoint(base, value.type)
        value = fl.b.sub(value, window) if "to" in inst.spec.modifiers else \
            fl.b.add(value, window)
    fl.write(inst.operands[0], value, t)


@lowering("prefetch", "prefetchu", "applypriority", "discard")
def cache_hint(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """Hints about caches: they change no value a program can observe (discard's lines
    become undefined, so leaving them as they were is one of the allowed outcomes)."""
