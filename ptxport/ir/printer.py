"""IR -> stable text, for golden files, debugging dumps and `ptxport inspect --ir`.

The text depends only on the IR (never on object ids or dict order that the IR does not
define), so the same PTX always prints the same way. It reads like PTX with the resolution
made visible: each block lists its successors, each variable its size and alignment.
"""

from __future__ import annotations

import re

from ptxport.ir import nodes as ir
from ptxport.ptx import ast
from ptxport.ptx.printer import print_operand

__all__ = ["print_ir", "print_function", "format_value"]


def print_ir(module: ir.Module) -> str:
    out = [f"module version {module.version[0]}.{module.version[1]} "
           f"target {','.join(module.target)} address_size {module.address_size}"]
    for var in module.globals.values():
        out.append(_variable(var))
    for function in module.functions.values():
        out.append("")
        out.extend(_function(function))
    return "\n".join(out) + "\n"


def print_function(function: ir.Function) -> str:
    """One function's IR, as print_ir prints it."""
    return "\n".join(_function(function)) + "\n"


def _natural(name: str):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _variable(var: ir.Variable) -> str:
    vector = f".v{var.vector}" if var.vector else ""
    shape = "[]" if var.unsized else (f"[{var.elements}]" if var.dims else "")
    linkage = "".join(f".{w} " for w in var.linkage)
    text = (f"{linkage}.{var.space} {var.name}: {vector}{var.type}{shape} "
            f"size {var.size} align {var.alignment}")
    if var.ptr_space or var.ptr_align:
        text += f" ptr(.{var.ptr_space or 'generic'}, align {var.ptr_align or 1})"
    if var.init is not None:
        text += " = {" + ", ".join(format_value(v) for v in var.init) + "}"
    return text


def _function(f: ir.Function) -> list[str]:
    kind = "kernel" if f.is_kernel else "func"
    returns = ", ".join(_param(p) for p in f.returns)
    head = f"{kind} {f.name}(" + ", ".join(_param(p) for p in f.params) + ")"
    if f.returns:
        head += f" -> ({returns})"
    for name, values in f.directives.items():
        head += f" {name}" + (f"({', '.join(map(str, values))})" if values else "")
    if f.is_declaration:
        return [head + " declared"]
    lines = [head + " {"]
    for var in sorted(f.variables.values(), key=lambda v: _natural(v.name)):
        lines.append("  " + _variable(var))
    for reg in sorted(f.registers.values(), key=lambda r: _natural(r.name)):
        vector = f".v{reg.vector}" if reg.vector else ""
        lines.append(f"  .reg {reg.name}: {vector}{reg.type}")
    for block in f.blocks:
        successors = ", ".join(b.label for b in block.successors) or "-"
        lines.append(f" {block.label}:  -> {successors}")
        for inst in block.instructions:
            lines.append("    " + format_instruction(inst))
    lines.append("}")
    return lines


def _param(p: ir.Variable) -> str:
    vector = f".v{p.vector}" if p.vector else ""
    shape = f"[{p.elements}]" if p.dims else ""
    text = f".{p.space} {vector}{p.type}{shape} {p.name}"
    if p.ptr_space or p.ptr_align:
        text += f" ptr(.{p.ptr_space or 'generic'}, align {p.ptr_align or 1})"
    return text


def format_instruction(inst: ir.Instruction) -> str:
    guard = ""
    if inst.guard is not None:
        guard = f"@{'!' if inst.guard_negated else ''}{inst.guard.name} "
    operands = ", ".join(format_value(o) for o in inst.operands)
    return f"{guard}{inst.spec.text}{' ' if operands else ''}{operands}"


def format_value(v) -> str:
    if isinstance(v, ir.Register | ir.Variable | ir.Function):
        return v.name
    if isinstance(v, ir.BasicBlock):
        return v.label
    if isinstance(v, ir.SpecialRegister):
        return v.text
    if isinstance(v, ir.RegisterElement):
        return f"{v.register.name}.{v.component}"
    if isinstance(v, ir.Address):
        if v.base is None:
            text = f"[{v.offset}]"
        else:
            text = f"[{v.base.name}{v.offset:+d}]" if v.offset else f"[{v.base.name}]"
        return text + ".unified" if v.unified else text
    if isinstance(v, ir.SymbolAddress):
        text = f"generic({v.target.name})" if v.generic else v.target.name
        return text + (f"{v.offset:+d}" if v.offset else "")
    if isinstance(v, ir.VectorValue):
        return "{" + ", ".join(format_value(e) for e in v.elements) + "}"
    if isinstance(v, ir.ListValue):
        inner = ", ".join(format_value(e) for e in v.elements)
        return f"[{inner}]" if v.bracketed else f"({inner})"
    if isinstance(v, ir.NotValue):
        return "!" + format_value(v.value)
    if isinstance(v, ir.NegValue):
        return "-" + format_value(v.value)
    if isinstance(v, ir.PairValue):
        return f"{format_value(v.first)}|{format_value(v.second)}"
    if isinstance(v, ir.Prototype):
        return v.label
    if isinstance(v, ast.IntImm | ast.FloatImm | ast.Sink | ast.Field):
        return print_operand(v)
    raise TypeError(f"cannot print IR value {v!r}")
