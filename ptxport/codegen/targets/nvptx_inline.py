"""Instructions that reach the GPU as themselves: inline PTX for the NVPTX target.

An instruction listed in `INLINE_PTX` (when its condition holds) is emitted as an LLVM
inline-asm call whose text is the instruction's own (`spec.text` and its operands), with its
registers as asm operands: the GPU then computes exactly what the original PTX asked for,
rounding, flushing, NaNs, scopes and all, without the CPU target's emulations. Registers pass
at their declared width (constraints b/h/r/l/q), so PTX's operand-size rules apply as in the
original; immediates and special registers are written into the text; memory operands take
their address in the instruction's state space, which the NVPTX target keeps as PTX defines
it (nvptx.py explains how).

docs/nvptx-target.md lists the same table for users.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.codegen.lower import I64, FunctionLowering
from ptxport.codegen.ops.data import state_space
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type
from ptxport.ptx.ast import FloatImm, IntImm, Sink

__all__ = ["INLINE_PTX", "PURE", "MEMORY", "CONVERGENT", "inline_ptx", "asm", "constraint"]

_FLOAT_TYPES = frozenset(("f16", "bf16", "f32", "f64", "f16x2", "bf16x2", "f32x2", "tf32"))


# How an instruction passed through as inline PTX relates to the code around it:
PURE = "pure"            # a function of its operands: LLVM may move, merge or drop it
MEMORY = "memory"        # reads or writes memory, or waits: kept in place and in order
CONVERGENT = "convergent"  # a warp or CTA takes part: also never duplicated or made divergent


def _is_float(inst: ir.Instruction) -> bool:
    return any(t in _FLOAT_TYPES for t in inst.spec.types)


def _always(inst: ir.Instruction) -> bool:
    return True


def _register_shift(inst: ir.Instruction) -> bool:
    """shl/shr by a register: PTX clamps the amount (LLVM would need a compare and select)."""
    return not isinstance(inst.operands[2], IntImm)


def _converts_float(inst: ir.Instruction) -> bool:
    """cvt forms that involve a floating-point type or saturate; integer truncation and
    extension stay LLVM's (address arithmetic that LLVM should see)."""
    return _is_float(inst) or inst.spec.get("sat") is not None or bool(inst.spec.get("pack"))


def _float_or_high(inst: ir.Instruction) -> bool:
    """mul/mad: floating point, and the upper half of integer products (a 128-bit product
    in LLVM for 64 bits); not the carry chains (.cc), whose flag the shared lowering keeps."""
    return _is_float(inst) or (inst.spec.get("mode") == "hi" and not inst.spec.get("cc"))


def _ordered_access(inst: ir.Instruction) -> bool:
    """ld/st with memory-model semantics or a cache operator that re-reads memory (.volatile,
    .relaxed/.acquire/.release with a scope, .mmio, .cv, .lu), or in a space LLVM has no
    address space for (shared::cluster): exactly as written."""
    sem = inst.spec.get("sem")
    space = inst.spec.get("space")
    space = space[0] if isinstance(space, tuple) else space
    if space in ("local", "param", "param::entry", "param::func"):
        return False
    return (sem not in (None, "weak") or inst.spec.has("cv") or inst.spec.has("lu")
            or space == "shared::cluster")


# opcode -> (when it passes through, its kind). Everything here reaches the GPU as the original
# instruction; docs/nvptx-target.md lists the same table for users.
INLINE_PTX: dict[str, tuple[Callable[[ir.Instruction], bool], str]] = {
    # floating point, every type, rounding mode, .ftz, .sat, .approx and .NaN form
    "mul": (_float_or_high, PURE),
    "mad": (_float_or_high, PURE),
    **{op: (_is_float, PURE) for op in (
        "add", "sub", "fma", "div", "min", "max", "abs", "neg", "rcp", "sqrt",
        "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "copysign", "testp", "setp", "set")},
    "slct": (_is_float, PURE),
    "cvt": (_converts_float, PURE),
    # integer and bit operations that are one PTX instruction but several LLVM ones
    **{op: (_always, PURE) for op in (
        "bfe", "bfi", "bfind", "prmt", "lop3", "shf", "fns", "bmsk", "szext", "sad", "mul24",
        "mad24", "dp4a", "dp2a", "isspacep", "mapa", "getctarank", "createpolicy",
        "vadd", "vsub", "vabsdiff", "vmin", "vmax", "vset", "vshl", "vshr", "vmad",
        "vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2",
        "vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4")},
    "shl": (_register_shift, PURE),
    "shr": (_register_shift, PURE),
    # memory: atomics with their scope and semantics, fences, asynchronous copies
    **{op: (_always, MEMORY) for op in (
        "atom", "red", "membar", "fence", "cp", "mbarrier", "nanosleep", "prefetch",
        "prefetchu", "applypriority", "discard")},
    # warp-wide matrix operations (tensor cores): every lane takes part
    **{op: (_always, CONVERGENT) for op in ("ldmatrix", "stmatrix", "movmatrix", "mma",
                                             "wmma")},
    # warpgroup matrix operations (sm_90a's tensor cores: nvptx.py compiles for sm_90a)
    "wgmma": (_always, CONVERGENT),
    **{op: (_always, MEMORY) for op in ("griddepcontrol", "pmevent", "setmaxnreg")},
    # textures and surfaces through object handles (.u64 registers; .texref variables are
    # refused where they are declared)
    **{op: (_always, MEMORY) for op in ("tex", "tld4", "txq", "suld", "sust", "sured", "suq",
                                         "istypep")},
    "ld": (_ordered_access, MEMORY),
    "st": (_ordered_access, MEMORY),
}

# Opcodes whose first operand is not a destination.
_NO_DESTINATION = frozenset(("st", "red", "cp", "membar", "fence", "nanosleep", "prefetch",
                             "prefetchu", "applypriority", "discard", "bar", "barrier",
                             "griddepcontrol", "pmevent", "setmaxnreg", "sust",
                             "sured"))


def constraint(bits: int) -> str:
    letter = {1: "b", 8: "h", 16: "h", 32: "r", 64: "l", 128: "q"}.get(bits)
    if letter is None:
        raise ValueError(bits)
    return letter


class _InlinePtx:
    """The asm text and operands of one instruction emitted as itself."""

    def __init__(self, fl: FunctionLowering, inst: ir.Instruction):
        self.fl, self.inst = fl, inst
        self.outputs: list[tuple[object, int]] = []   # (destination operand, bits)
        self.inputs: list[ll.Value] = []
        self.input_constraints: list[str] = []
        # 8-bit registers (.b8: e2m1x2 conversions) have no asm constraint: they travel in
        # 16-bit ones, converted to and from .b8 registers declared around the instruction.
        self.bytes = 0
        self.before: list[str] = []
        self.after: list[str] = []

    def emit(self, kind: str) -> None:
        fl, inst = self.fl, self.inst
        operands = list(inst.operands)
        texts = []
        for i, operand in enumerate(operands):
            is_destination = i == 0 and inst.opcode not in _NO_DESTINATION or (
                i == 0 and inst.opcode in ("bar", "barrier") and inst.spec.has("red"))
            if inst.opcode == "wgmma":
                is_destination = i == 0 and inst.spec.get("op") == "mma_async"
            if is_destination and not isinstance(operand, ir.Address):
                texts.append(self.output(operand))
            else:
                texts.append(self.input(operand))
        if inst.opcode == "wgmma" and self.outputs:
            self._tie_outputs()           # wgmma.mma_async reads d too (scale-d)
        text = inst.spec.text + (" " + ", ".join(texts) if texts else "") + ";"
        if self.bytes:
            text = " ".join([f"{{ .reg .b8 %byte<{self.bytes}>;", *self.before, text,
                             *self.after, "}"])
        # Numbered operands: outputs first, then inputs.
        count = len(self.outputs)
        text = re.sub(r"\$(o|i)(\d+)", lambda m: "$" + str(int(m.group(2)) + (
            count if m.group(1) == "i" else 0)), text)
        constraints = [f"={constraint(bits)}" for _, bits in self.outputs]
        constraints += self.input_constraints
        if kind != PURE:
            constraints.append("~{memory}")
        types = [_int(bits) for _, bits in self.outputs]
        ret = (ll.VoidType() if not types else types[0] if len(types) == 1
               else ll.LiteralStructType(types))
        result = asm(fl, text, ret, self.inputs, ",".join(constraints), kind)
        for i, (dest, bits) in enumerate(self.outputs):
            value = result if len(self.outputs) == 1 else fl.b.extract_value(result, i)
            fl.write(dest, value, "pred" if bits == 1 else _register_type(dest))

    def _tie_outputs(self) -> None:
        """Each output register also an input, tied to it: an instruction that reads and
        writes its destination (wgmma's accumulators)."""
        for j, (dest, bits) in enumerate(list(self.outputs)):
            self.inputs.append(_as_bits(self.fl, self.fl.read(dest, _register_type(dest)), bits))
            self.input_constraints.append(str(j))

    def output(self, operand) -> str:
        if isinstance(operand, Sink):
            return "_"
        if isinstance(operand, ir.PairValue):
            return f"{self.output(operand.first)}|{self.output(operand.second)}"
        if isinstance(operand, ir.VectorValue):
            return "{" + ", ".join(self.output(e) for e in operand.elements) + "}"
        if isinstance(operand, ir.Register) and not operand.vector:
            self.outputs.append((operand, _bits(operand.type)))
            if operand.type.bits == 8:
                self.bytes += 1
                self.after.append(f"cvt.u16.u8 $o{len(self.outputs) - 1}, %byte{self.bytes - 1};")
                return f"%byte{self.bytes - 1}"
            return f"$o{len(self.outputs) - 1}"
        if isinstance(operand, ir.RegisterElement):
            reg = operand.register
            if reg.vector:
                self.outputs.append((operand, _bits(reg.type)))
                return f"$o{len(self.outputs) - 1}"
            self.outputs.append((reg, _bits(reg.type)))  # a video selector: d.h0
            return f"$o{len(self.outputs) - 1}.{operand.component}"
        raise self.fl.unsupported(self.inst, f"inline PTX cannot write {operand!r}")

    def _value(self, value: ll.Value, bits: int) -> str:
        self.inputs.append(value)
        self.input_constraints.append(constraint(bits))
        return f"$i{len(self.inputs) - 1}"

    def input(self, operand) -> str:
        fl = self.fl
        if isinstance(operand, Sink):
            return "_"
        if isinstance(operand, IntImm):
            return str(operand.value)
        if isinstance(operand, FloatImm):
            return (f"0f{operand.bits:08X}" if operand.width == 32 else f"0d{operand.bits:016X}")
        if isinstance(operand, ir.SpecialRegister):
            return operand.text
        if isinstance(operand, ir.NotValue):
            return "!" + self.input(operand.value)
        if isinstance(operand, ir.NegValue):
            return "-" + self.input(operand.value)
        if isinstance(operand, ir.VectorValue):
            return "{" + ", ".join(self.input(e) for e in operand.elements) + "}"
        if isinstance(operand, ir.PairValue):
            return f"{self.input(operand.first)}|{self.input(operand.second)}"
        if isinstance(operand, ir.Register) and not operand.vector:
            bits = _bits(operand.type)
            value = self._value(_as_bits(fl, fl.read(operand, operand.type), bits), bits)
            if operand.type.bits != 8:
                return value
            self.bytes += 1
            self.before.append(f"cvt.u8.u16 %byte{self.bytes - 1}, {value};")
            return f"%byte{self.bytes - 1}"
        if isinstance(operand, ir.RegisterElement):
            reg = operand.register
            if reg.vector:
                bits = _bits(reg.type)
                return self._value(_as_bits(fl, fl.read(operand, reg.type), bits), bits)
            bits = _bits(reg.type)
            return self._value(_as_bits(fl, fl.read(reg, reg.type), bits), bits) + \
                f".{operand.component}"
        if isinstance(operand, ir.Variable | ir.SymbolAddress):
            return self._value(fl.read(operand, "u64"), 64)
        if isinstance(operand, ir.Address):
            return self.address(operand)
        if isinstance(operand, ir.ListValue) and operand.bracketed:  # [tex, {x, y}]
            return "[" + ", ".join(self.input(e) for e in operand.elements) + "]"
        raise fl.unsupported(self.inst, f"inline PTX cannot take the operand {operand!r}")

    def address(self, operand: ir.Address) -> str:
        """[a+offset]: a register keeps its value (the address in the instruction's space);
        a variable becomes its address in that space."""
        fl = self.fl
        base, offset = operand.base, operand.offset
        suffix = f"+{offset}" if offset > 0 else (str(offset) if offset < 0 else "")
        tail = "].unified" if operand.unified else "]"
        if base is None:
            return f"[{offset}{tail}"
        if isinstance(base, ir.Register):
            return "[" + self.input(base) + suffix + tail
        if state_space(self.inst) is None:  # a variable's generic address
            pointer = fl.target.variable_pointer(fl, base)
            return "[" + self._value(fl.b.ptrtoint(pointer, I64), 64) + suffix + tail
        return "[" + self._value(fl.symbol_address(base), 64) + suffix + tail


def _int(bits: int) -> ll.IntType:
    return ll.IntType(16 if bits == 8 else bits)


def _bits(t: Type) -> int:
    return 1 if t.kind == "pred" else max(t.bits, 8)


def _register_type(dest) -> Type:
    reg = dest.register if isinstance(dest, ir.RegisterElement) else dest
    t = reg.type
    return TYPES[f"b{t.bits}"] if t.bits in (16, 32, 64, 128) else t


def _as_bits(fl: FunctionLowering, value: ll.Value, bits: int) -> ll.Value:
    """A register's value as the integer (or i1) an asm operand of `bits` bits takes."""
    value = fl.as_int(value)
    if value.type.width < _int(bits).width:
        value = fl.b.zext(value, _int(bits))
    return value


def inline_ptx(fl: FunctionLowering, inst: ir.Instruction, kind: str) -> None:
    """Emit `inst` as itself, as inline PTX."""
    _InlinePtx(fl, inst).emit(kind)


def asm(fl: FunctionLowering, text: str, ret: ll.Type, args: list, constraints: str,
         kind: str = MEMORY) -> ll.Value:
    """A call of inline PTX `text` (operands $0...: outputs, then `args`)."""
    fn_type = ll.FunctionType(ret, [a.type for a in args])
    call = fl.b.call(ll.InlineAsm(fn_type, text, constraints, side_effect=kind != PURE), args)
    call.attributes = _CallAttributes(_ATTRIBUTES[kind])
    return call


class _CallAttributes(ll.instructions.CallInstrAttributes):
    """llvmlite's call-site attributes and `willreturn`: without it LLVM may not move a load
    across the call, and then cannot merge the loads that ld.v4 became back into one."""

    _known = ll.instructions.CallInstrAttributes._known | {"willreturn"}


_ATTRIBUTES = {PURE: ("nounwind", "readnone", "willreturn"), MEMORY: ("nounwind",),
               CONVERGENT: ("nounwind", "convergent")}
