"""Kernel parameters as values a block's warps share.

A kernel's parameters do not change while it runs, and every warp loads the same ones: the
kernel's stores may alias the parameter buffer as far as LLVM knows, so each warp's call
loaded them again (a stencil's four, with the buffer's address, in every warp's first
segment), and a parameter's register live across a barrier was stored in each warp's frame
and loaded from there after it. Where the kernel reads its parameters only through
`ld.param [name+offset]` (no address of one taken: nothing else can reach them), each such
load reads run_blocks' copy of the bytes it names instead (rounds.py: copied from the
buffer once per run_blocks call, after the block context's fields, on run_blocks' stack),
which LLVM forwards as values every warp's call shares. A register whose only write is such
a load of its own type (a `ld.param.u32 %r10, [width]`) reads the copy wherever it is read:
it needs no place in the warp's frame, nor the write.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I64, value_type
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.abi import CTX
from ptxport.codegen.targets.cpu.gang.lanes import BLOCK_COPY
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.ir.analysis import may_write

__all__ = ["PARAMS_AT", "alignment", "direct_params", "load", "param_registers", "slot"]

# where the copy of the parameters starts in run_blocks' block copy (16-aligned, as the
# buffer is)
PARAMS_AT = (CTX.size + 15) // 16 * 16


def alignment(at: int, typ: ll.Type) -> int:
    """The alignment a `typ` at byte `at` of a 16-aligned buffer has."""
    size = _size(typ)
    return min(size, at & -at) if at else size


def _size(typ: ll.Type) -> int:
    if isinstance(typ, ll.IntType):
        return max(typ.width // 8, 1)
    return {"half": 2, "bfloat": 2, "float": 4, "double": 8}.get(str(typ), 8)


def _variables(operand, out: list) -> None:
    if isinstance(operand, ir.Variable):
        out.append(operand)
    elif isinstance(operand, ir.Address):
        _variables(operand.base, out)
    elif isinstance(operand, ir.VectorValue):
        for element in operand.elements:
            _variables(element, out)


def _is_direct_load(inst: ir.Instruction) -> bool:
    return inst.opcode in ("ld", "ldu") and state_space(inst) == "param" \
        and isinstance(inst.operands[1], ir.Address) \
        and isinstance(inst.operands[1].base, ir.Variable)


def direct_params(kernel: ir.Function) -> dict[int, int]:
    """id(parameter variable) -> its offset in the parameter buffer, where every mention
    of the kernel's parameters is the address of an `ld.param`/`ldu.param`; else {}."""
    if not kernel.is_kernel or not kernel.params:
        return {}
    ids = {id(p) for p in kernel.params}
    for inst in kernel.instructions():
        mentioned: list = []
        for i, operand in enumerate(inst.operands):
            if i == 1 and _is_direct_load(inst):
                continue
            _variables(operand, mentioned)
        if any(id(v) in ids for v in mentioned):
            return {}
    slots, _ = param_layout(kernel)
    return {id(s.variable): s.offset for s in slots}


def _offset(fl, operand) -> int | None:
    if not isinstance(operand, ir.Address) or not isinstance(operand.base, ir.Variable):
        return None
    at = fl.param_offsets.get(id(operand.base))
    return None if at is None else at + operand.offset


def load(fl, inst: ir.Instruction) -> list | None:
    """The values of `inst`, an ld.param, read from run_blocks' copy of the parameters;
    None where it is not a direct load of a kernel parameter (direct_params)."""
    at = _offset(fl, inst.operands[1])
    if at is None:
        return None
    t = instruction_type(inst)
    return [_value(fl, at + i * t.size, value_type(t)) for i in range(vector_count(inst))]


def _value(fl, at: int, typ: ll.Type) -> ll.Value:
    """The parameter buffer's bytes at `at` as a `typ`, loaded from the copy once, at the
    gang function's entry."""
    cache = fl.target._entry_loads.setdefault(fl.llfn, {})
    value = cache.get(("param", at, str(typ)))
    if value is None:
        with fl.b.goto_entry_block():
            fl.b.position_at_start(fl.entry)
            value = cache[("param", at, str(typ))] = ll.IRBuilder.load(
                fl.b, slot(fl, at, typ), typ=typ, align=alignment(PARAMS_AT + at, typ))
    return value


def param_registers(fl, kernel: ir.Function) -> dict[int, tuple[int, ll.Type]]:
    """id(register) -> (offset, type) of the registers whose only write in `kernel` is an
    unguarded direct ld.param of a scalar of the register's own LLVM type, alike in every
    lane (fl.uniform)."""
    if not fl.param_offsets:
        return {}
    writes: dict = {}
    registers: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(id(reg), []).append(inst)
            registers[id(reg)] = reg
    found = {}
    for key, reg in registers.items():
        insts = writes[key]
        if len(insts) != 1 or reg not in fl.uniform or reg.vector:
            continue
        inst = insts[0]
        at = _offset(fl, inst.operands[1]) if _is_direct_load(inst) else None
        if at is None or inst.guard is not None or inst.operands[0] is not reg \
                or vector_count(inst) != 1:
            continue
        typ = value_type(instruction_type(inst))
        if str(typ) == str(fl.storage_type(reg)):
            found[key] = (at, typ)
    return found


def slot(fl, at: int, typ: ll.Type) -> ll.Value:
    """A typed pointer to the copy's bytes at `at` (the parameter buffer's offset)."""
    fl.target.block_params[(at, str(typ))] = typ      # (copied by run_blocks)
    pointer = ll.IRBuilder.gep(fl.b, fl.llfn.args[BLOCK_COPY], [I64(PARAMS_AT + at)],
                               source_etype=I8)
    pointer.type = ll.PointerType(typ)
    return pointer
