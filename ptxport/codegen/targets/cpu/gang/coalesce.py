"""Warp gangs' runs of scalar loads: `ld.global` of 2 or 4 consecutive elements from one base
register (offsets o, o + s, ...), each under its own predicate. Triton's layouts for a size
not known to be a multiple of 16 load a thread's contiguous elements this way, one
predicated `ld.global.b32` each; lowered one by one, each is a gather over the warp (the
lanes' addresses are 4 elements apart). A run is loaded at its first load as one masked
access of the warp's elements (access_kinds.py's interleaved access: element i of lane l under
predicate i of lane l), when the lanes' runs lie one after another and the range they touch
is inside one allocation; else each load on its own, as before (exact faults). Each load of
the run then writes its register where it stands.

Triton 3.6 gives each element its own address register (`add.s64 %rd2, %rd1, 4`, then
`[%rd2 + 0]`): a register written once, by an unguarded add of an immediate to a register
written once, counts as that register plus the immediate (_offset_bases).

A run's loads are read early, so between its first and last load nothing may write memory
or change the base register, the predicates, or the mask (segment.py ends segments at
barriers and warp operations; a branch ends the block).
"""

from __future__ import annotations

from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang.access_kinds import interleave_lanes, interleaved
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.ptx.ast import IntImm

_WRITES_MEMORY = {"st", "atom", "red", "cp", "call", "ret", "exit", "bar", "barrier", "trap"}
_MEMORY = _WRITES_MEMORY | {"ld", "ldu", "ldmatrix", "tex", "tld4", "suld", "prefetch"}


def _offset_bases(kernel: ir.Function) -> dict:
    """id(register) -> (base register, offset) where the register's one write is an
    unguarded `add.{s64,u64,b64} %r, %base, imm` of a base written once (followed down a
    chain of such adds): the register always holds base + offset where it holds anything."""
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(id(reg), []).append(inst)
    found = {}
    for insts in writes.values():
        inst = insts[0]
        if len(insts) != 1 or inst.opcode != "add" or inst.guard is not None \
                or inst.spec.types[-1] not in ("s64", "u64", "b64") or len(inst.operands) != 3:
            continue
        dest, base, step = inst.operands
        if isinstance(dest, ir.Register) and isinstance(base, ir.Register) \
                and isinstance(step, IntImm) and len(writes.get(id(base), ())) == 1:
            found[id(dest)] = (base, step.value)
    for key, (base, offset) in list(found.items()):
        seen = {key}
        while id(base) in found and id(base) not in seen:
            seen.add(id(base))
            base, more = found[id(base)]
            offset += more
        found[key] = (base, offset)
    return found


def _scalar_access(fl: GangLowering, inst: ir.Instruction):
    """(opcode, base register, offset, type) of a per-lane scalar ld/st.global at
    [register+offset] (a register that is another plus a constant: that one's), else
    None."""
    if inst.opcode not in ("ld", "st") or state_space(inst) != "global" \
            or vector_count(inst) != 1:
        return None
    address, data = inst.operands if inst.opcode == "st" else inst.operands[::-1]
    if isinstance(data, ir.VectorValue) and len(data.elements) == 1:
        data = data.elements[0]
    if not isinstance(address, ir.Address) or not isinstance(address.base, ir.Register):
        return None
    if isinstance(data, ir.Register) and data.vector:
        return None
    if inst.opcode == "ld" and (not isinstance(data, ir.Register) or data in fl.uniform):
        return None
    t = instruction_type(inst)
    if t.size not in (4, 8):
        return None
    base, offset = fl.offset_bases.get(id(address.base), (address.base, 0))
    return inst.opcode, base, address.offset + offset, t


def _reads(inst: ir.Instruction) -> set:
    """The registers a run's store reads when the run is stored at its last: its value and
    its predicate."""
    value = inst.operands[1]
    values = value.elements if isinstance(value, ir.VectorValue) else [value]
    return {id(v) for v in [*values, inst.guard] if isinstance(v, ir.Register)}


def find_runs(fl: GangLowering, instructions) -> dict:
    """id(instruction) -> the accesses of its run, for a segment's `instructions`: a load
    run under its first load (loaded there), a store run under its last store (stored
    there; its other stores map to None)."""
    runs: dict = {}
    code = list(instructions)
    if fl.offset_bases is None:
        fl.offset_bases = _offset_bases(fl.function)
    for i, inst in enumerate(code):
        first = _scalar_access(fl, inst) if id(inst) not in runs else None
        if first is None:
            continue
        members = _run_from(fl, code[i:], first)
        if len(members) < 2:
            continue
        if first[0] == "ld":
            runs.update({id(m): [] for m in members[1:]})
            runs[id(inst)] = members
        else:
            runs.update({id(m): None for m in members[:-1]})
            runs[id(members[-1])] = members
    return {k: v for k, v in runs.items() if v != []}


def _run_from(fl: GangLowering, code: list, first) -> list:
    """The run that starts with code[0] (2 or 4 accesses, or fewer: none)."""
    op, base, offset, t = first
    members = [code[0]]
    written = {id(r) for r in may_write(code[0])}
    needed = _reads(code[0]) if op == "st" else set()
    for later in code[1:]:
        if id(base) in written or len(members) == 4:
            break
        found = _scalar_access(fl, later)
        if found is not None and found[:2] == (op, base) and found[3] == t \
                and found[2] == offset + len(members) * t.size:
            if op == "ld" and later.guard is not None and id(later.guard) in written:
                break       # its predicate would be read before it is set
            members.append(later)
            needed |= _reads(later) if op == "st" else set()
        elif later.opcode in (_WRITES_MEMORY if op == "ld" else _MEMORY):
            break
        written |= {id(r) for r in may_write(later)}
        if written & needed:
            break
    return members[:4 if len(members) == 4 else 2]


def interleaved_access(fl: GangLowering, t, masks: list, pointer, values=None):
    """One masked access of W * len(masks) elements at `pointer` (lane l's element k under
    masks[k] of lane l): loaded (values None), taken apart into one vector of the lanes per
    element; stored, `values` (a vector of the lanes per element) put together likewise
    (access_kinds.interleaved, with the elements' own masks)."""
    return interleaved(fl, t, len(masks), pointer, values,
                       mask=interleave_lanes(fl, masks))
