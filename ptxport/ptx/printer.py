"""Syntax tree -> PTX text that ptxas accepts and that parses back to an equal tree."""

from __future__ import annotations

import struct

from ptxport.ptx import ast

__all__ = ["print_module", "print_operand", "print_instruction"]


def print_module(module: ast.Module) -> str:
    out = [f".version {module.version[0]}.{module.version[1]}"]
    if module.target:
        out.append(".target " + ", ".join(module.target))
    out.append(f".address_size {module.address_size}")
    for item in module.items:
        out.append("")
        if isinstance(item, ast.Function):
            out.extend(_function(item))
        elif isinstance(item, ast.Variable):
            out.append(_variable(item) + ";")
        elif isinstance(item, ast.Pragma):
            out.append(_pragma(item))
        else:
            out.append(_directive(item))
    return "\n".join(out) + "\n"


def _directive(d: ast.Directive) -> str:
    if d.name == "alias":
        return f".alias {d.text};"
    return f".{d.name} {d.text}"


def _pragma(p: ast.Pragma) -> str:
    return ".pragma " + ", ".join(f'"{v}"' for v in p.values) + ";"


def _function(f: ast.Function) -> list[str]:
    head = " ".join(f".{w}" for w in f.linkage)
    head = (head + " " if head else "")
    if f.attributes and f.kind == "func":
        head += "".join(f".attribute(.{a}) " for a in f.attributes)
    head += f".{f.kind} "
    if f.kind == "func" and f.returns:
        head += "(" + ", ".join(_variable(p) for p in f.returns) + ") "
    head += f.name
    lines = [head]
    if f.params or f.kind == "entry":
        lines[0] += "("
        lines.extend(f"\t{_variable(p)}{',' if i + 1 < len(f.params) else ''}"
                     for i, p in enumerate(f.params))
        lines.append(")")
    for name, values in f.directives:
        lines.append(f".{name} " + ", ".join(str(v) for v in values) if values else f".{name}")
    lines.extend(_pragma(p) for p in f.pragmas)
    if f.body is None:
        lines[-1] += ";"
        return lines
    lines.append("{")
    _statements(f.body, lines, "\t")
    lines.append("}")
    return lines


def _statements(statements: list, lines: list[str], indent: str) -> None:
    for s in statements:
        if isinstance(s, ast.Instruction):
            lines.append(indent + print_instruction(s))
        elif isinstance(s, ast.Label):
            lines.append(f"{s.name}:")
        elif isinstance(s, ast.Variable):
            lines.append(indent + _variable(s) + ";")
        elif isinstance(s, ast.Block):
            lines.append(indent + "{")
            _statements(s.statements, lines, indent + "\t")
            lines.append(indent + "}")
        elif isinstance(s, ast.Pragma):
            lines.append(indent + _pragma(s))
        elif isinstance(s, ast.DebugLoc):
            lines.append(indent + s.text)
        elif isinstance(s, ast.BranchTargets):
            lines.append(f"{s.label}: .{s.kind} {', '.join(s.targets)};")
        elif isinstance(s, ast.CallPrototype):
            returns = ("(" + ", ".join(_variable(p) for p in s.returns) + ") "
                       if s.returns else "")
            params = "(" + ", ".join(_variable(p) for p in s.params) + ")"
            tail = " .noreturn" if s.noreturn else ""
            lines.append(f"{s.label}: .callprototype {returns}_ {params}{tail};")
        else:
            raise TypeError(f"cannot print statement {s!r}")


def print_instruction(i: ast.Instruction) -> str:
    guard = ""
    if i.guard is not None:
        guard = f"@{'!' if i.guard_negated else ''}{print_operand(i.guard)} "
    ops = ", ".join(print_operand(o) for o in i.operands)
    return f"{guard}{i.spec.text}{' ' if ops else ''}{ops};"


def _variable(v: ast.Variable) -> str:
    parts = [f".{w}" for w in v.linkage]
    parts.append(f".{v.space}")
    parts += [f".attribute(.{a})" for a in v.attributes]   # where the ISA's examples put it
    if v.align is not None:
        parts.append(f".align {v.align}")
    if v.vector:
        parts.append(f".{v.vector}")
    parts.append(f".{v.type}")
    if v.ptr:
        parts.append(".ptr")
        if v.ptr_space:
            parts.append(f".{v.ptr_space}")
        if v.ptr_align is not None:
            parts.append(f".align {v.ptr_align}")
    name = v.name
    if v.count is not None:
        name += f"<{v.count}>"
    name += "".join("[]" if d is None else f"[{d}]" for d in v.dims)
    parts.append(name)
    text = " ".join(parts)
    if v.init is not None:
        text += " = " + _initializer(v.init)
    return text


def _initializer(init: ast.Initializer) -> str:
    if isinstance(init.value, list):
        return "{" + ", ".join(_initializer(i) for i in init.value) + "}"
    return print_operand(init.value)


def print_operand(o: ast.Operand) -> str:
    if isinstance(o, ast.Name):
        return o.name if o.component is None else f"{o.name}.{o.component}"
    if isinstance(o, ast.IntImm):
        return str(o.value)
    if isinstance(o, ast.FloatImm):
        return f"0f{o.bits:08X}" if o.width == 32 else f"0d{o.bits:016X}"
    if isinstance(o, ast.SymbolOffset):
        return f"{o.name}{o.offset:+d}"
    if isinstance(o, ast.GenericOf):
        return f"generic({o.name})" + (f"{o.offset:+d}" if o.offset else "")
    if isinstance(o, ast.Field):
        return f"{o.name} = {print_operand(o.value)}"
    if isinstance(o, ast.Address):
        if o.base is None:
            text = f"[{o.offset}]"
        else:
            base = print_operand(o.base)
            text = f"[{base}{o.offset:+d}]" if o.offset else f"[{base}]"
        return text + ".unified" if o.unified else text
    if isinstance(o, ast.Vector):
        return "{" + ", ".join(print_operand(e) for e in o.elements) + "}"
    if isinstance(o, ast.Bracketed):
        return "[" + ", ".join(print_operand(e) for e in o.elements) + "]"
    if isinstance(o, ast.Parenthesized):
        return "(" + ", ".join(print_operand(e) for e in o.elements) + ")"
    if isinstance(o, ast.Not):
        return "!" + print_operand(o.operand)
    if isinstance(o, ast.Neg):
        return "-" + print_operand(o.operand)
    if isinstance(o, ast.PredPair):
        return f"{print_operand(o.first)}|{print_operand(o.second)}"
    if isinstance(o, ast.Sink):
        return "_"
    raise TypeError(f"cannot print operand {o!r}")


def float_value(o: ast.FloatImm) -> float:
    """The value of a float immediate (for printers and constant folding)."""
    if o.width == 32:
        return struct.unpack("<f", struct.pack("<I", o.bits))[0]
    return struct.unpack("<d", struct.pack("<Q", o.bits))[0]
