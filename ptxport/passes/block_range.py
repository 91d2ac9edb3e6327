"""Make a kernel compute a range of its launch's blocks: the device group's pass.

A device group (runtime/group.py) runs one launch over several members, each on a box of
the grid's blocks. A member is launched with a smaller grid, so its kernel must see the
block indices and grid size of the whole launch: this pass gives the kernel six hidden
`.u32` parameters after its own (the first block of the box, x/y/z, and the whole grid's
size, x/y/z) and rewrites every read of %ctaid.* into %ctaid.* plus the first block, and of
%nctaid.* into the whole grid's size. %clusterid and %nclusterid read the same (launches are
of one-block clusters). Device functions that read them are inlined first (ptxport.passes.inline),
so that every read is in the kernel. Targets are not touched: the result is an ordinary IR
module compiled like any other, whose source is the program's PTX with a line appended that
names the pass (so that its compiled images are cached apart from the program's kernel's).
"""

from __future__ import annotations

import dataclasses
from functools import cache

from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES
from ptxport.passes.inline import functions_that, inline_calls
from ptxport.ptx.ast import Source

__all__ = ["HIDDEN_PARAMS", "run", "reads_block_index"]

# the hidden parameters, in order, after the kernel's own
HIDDEN_PARAMS = ("__ptxport_first_ctaid_x", "__ptxport_first_ctaid_y", "__ptxport_first_ctaid_z",
                 "__ptxport_nctaid_x", "__ptxport_nctaid_y", "__ptxport_nctaid_z")
_OFFSET = {"%ctaid": 0, "%clusterid": 0}      # reads offset by the first block
_WHOLE = {"%nctaid": 3, "%nclusterid": 3}     # reads replaced by the whole grid's size
_AXES = {"x": 0, "y": 1, "z": 2}

_SNIPPET = """.version 7.0
.target sm_80
.address_size 64
.visible .entry snippet(.param .u32 p)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [p];
    add.u32 %r2, %r1, %r1;
    mov.u32 %r2, %ctaid.x;
    ret;
}
"""


@cache
def _specs():
    """The specs of `ld.param.u32`, `add.u32` and `mov.u32`, as the front end makes them."""
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    kernel = build(parse(_SNIPPET, "<block_range>")).functions["snippet"]
    load, add, mov = list(kernel.instructions())[:3]
    return load.spec, add.spec, mov.spec


def _is_block_register(value) -> bool:
    return isinstance(value, ir.SpecialRegister) and (value.name in _OFFSET
                                                      or value.name in _WHOLE)


def reads_block_index(f: ir.Function) -> bool:
    """Whether `f` itself reads %ctaid, %nctaid, %clusterid or %nclusterid."""
    return any(_is_block_register(o) for inst in f.instructions() for o in inst.operands)


def run(module: ir.Module, kernel_name: str) -> ir.Module:
    """A new module in which kernel `kernel_name` takes the hidden parameters HIDDEN_PARAMS
    and computes the blocks first + (0..grid) of a launch of the whole grid's size; the other
    functions and the module's variables are shared with `module`, which is not changed.

    Raises UnsupportedFeatureError for a vector read of a whole special register (`%ctaid`
    without a component), which no front end emits, and for recursion through a function
    that reads the block index."""
    kernel = module.functions[kernel_name]
    readers = functions_that(module, reads_block_index)
    inlined = inline_calls(module, kernel, readers, "group",
                           "reads the block index (%ctaid/%nctaid)").function
    u32 = TYPES["u32"]
    params = [ir.Variable(name, "param", u32) for name in HIDDEN_PARAMS]
    values = [ir.Register(f"%{name}", u32) for name in HIDDEN_PARAMS]
    load_spec, add_spec, mov_spec = _specs()
    f = dataclasses.replace(inlined, params=[*inlined.params, *params],
                            registers=dict(inlined.registers), blocks=[])
    for register in values:
        f.registers[register.name] = register
    twins = {}
    for block in inlined.blocks:
        twin = ir.BasicBlock(block.label, block.pos)
        twins[id(block)] = twin
        f.blocks.append(twin)
    for block in inlined.blocks:
        out = twins[id(block)].instructions
        if block is inlined.blocks[0]:
            out += [ir.Instruction(load_spec, (register, ir.Address(param)), pos=kernel.pos)
                    for register, param in zip(values, params, strict=True)]
        for inst in block.instructions:
            out += _rewrite(inst, f, values, (add_spec, mov_spec), twins, module)
    for block, twin in zip(inlined.blocks, f.blocks, strict=True):
        twin.successors = [twins[id(s)] for s in block.successors]
    functions = dict(module.functions)
    functions[kernel_name] = f
    return ir.Module(module.version, module.target, module.address_size, module.globals,
                     functions, _own_source(module.source, kernel_name), module.lines)


def _own_source(source: Source | None, kernel_name: str) -> Source | None:
    """The new module's source: the program's PTX text (positions, hence error locations,
    stay valid) with a line saying what the pass did appended. Not `source` itself: a
    module's source is also what identifies its code (the CPU target's on-disk image cache
    keys images by its text and the kernel's name), and the pass's kernel is not the
    program's: sharing the key loaded either kernel's image for the other."""
    if source is None:
        return None
    return Source(f"{source.text}\n// {kernel_name}: block_range pass (hidden parameters "
                  f"{', '.join(HIDDEN_PARAMS)})\n", source.name)


def _retarget(value, twins):
    if isinstance(value, ir.BasicBlock):
        return twins.get(id(value), value)
    if isinstance(value, ir.ListValue) and any(isinstance(e, ir.BasicBlock)
                                               for e in value.elements):
        return dataclasses.replace(value, elements=tuple(_retarget(e, twins)
                                                         for e in value.elements))
    return value


def _rewrite(inst: ir.Instruction, f: ir.Function, values: list[ir.Register], specs,
             twins: dict, module: ir.Module) -> list[ir.Instruction]:
    """`inst` (branch targets moved to the copied blocks), after the additions its block
    index reads need: `mov %read, %ctaid.c; add %total, %read, first_c` (the special
    register read by a mov, the form every target lowers)."""
    add_spec, mov_spec = specs
    before, operands = [], []
    for operand in inst.operands:
        operand = _retarget(operand, twins)
        if _is_block_register(operand):
            if operand.component not in _AXES:
                raise UnsupportedFeatureError(
                    operand.text, "group", module.location(inst.pos),
                    "a device group reads the block index per component (.x, .y, .z)")
            axis = _AXES[operand.component]
            if operand.name in _WHOLE:
                operand = values[_WHOLE[operand.name] + axis]
            else:
                read, total = (ir.Register(f"%__ptxport_{operand.name[1:]}_{operand.component}"
                                           f"_{len(f.registers) + k}", TYPES["u32"])
                               for k in range(2))
                f.registers[read.name], f.registers[total.name] = read, total
                before += [ir.Instruction(mov_spec, (read, operand), pos=inst.pos),
                           ir.Instruction(add_spec, (total, read, values[axis]), pos=inst.pos)]
                operand = total
        operands.append(operand)
    if not before and all(a is b for a, b in zip(operands, inst.operands, strict=True)):
        return [inst]
    return [*before, ir.Instruction(inst.spec, tuple(operands), inst.guard,
                                    inst.guard_negated, inst.pos)]
