"""Linking PTX modules: what nvlink does for the relocatable units of an `nvcc -rdc=true`
program, at the PTX level (ptxport compiles one module per program).

PTX ISA 11.6, "Linking Directives" (.extern, .visible, .weak, .common):
- a `.visible` (or `.weak`, `.common`) definition names one thing across the units; two
  `.visible` definitions of one name are an error, and of several `.weak` or `.common` ones
  the first is kept (nvcc emits identical template instantiations and inline functions
  `.weak` in every unit that uses them);
- an `.extern` declaration refers to a definition in another unit: it is dropped where one
  exists, else kept once (the driver's malloc, vprintf...);
- a name without linkage is the unit's own: where it clashes with a name of another unit
  (printf's `$str` in every unit), the later unit's is renamed.
`.file` indexes are renumbered per unit so that `.loc` lines still name their files.
"""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass, replace

from ptxport.errors import CompileError
from ptxport.ptx import ast
from ptxport.ptx.parser import parse
from ptxport.ptx.printer import print_module

__all__ = ["link", "link_text"]

_SHARED = ("visible", "weak", "common")


def link_text(texts: list[str], names: list[str] | None = None) -> str:
    """The PTX text of the modules `texts` (named `names` in messages) linked into one."""
    names = names or [f"unit{i}.ptx" for i in range(len(texts))]
    return print_module(link([parse(t, n) for t, n in zip(texts, names, strict=True)]))


def link(modules: list[ast.Module]) -> ast.Module:
    """One module holding every unit's items (see the module docstring). `.extern`
    declarations stay: the IR takes a declaration and the definition of one name in either
    order (ir/from_ptx.py). Raises CompileError for a name two units define `.visible`."""
    _check_visible_once(modules)
    taken: set[str] = set()
    items: list[ast.TopLevel] = []
    file_base = 0
    for index, module in enumerate(modules):
        own = [i for i in module.items if isinstance(i, ast.Function | ast.Variable)]
        renames = {i.name: f"{i.name}$unit{index}" for i in own
                   if not _shares(i) and not _is_declaration(i) and i.name in taken}
        files = 0
        for item in module.items:
            if isinstance(item, ast.Directive) and item.name == "file":
                files = max(files, _file_index(item.text))
                items.append(replace(item, text=_shift_file(item.text, file_base)))
            elif isinstance(item, ast.Directive | ast.Pragma):
                items.append(item)
            elif _shares(item) and not _is_declaration(item) and item.name in taken:
                continue                       # a later copy of a .weak/.common definition
            else:
                items.append(_renamed(item, renames, file_base) if renames or file_base
                             else item)
        taken.update(i.name for i in own if not _is_declaration(i))
        taken.update(renames.values())
        file_base += files
    first = modules[0]
    return ast.Module(max(m.version for m in modules), first.target, first.address_size, items)


def _shares(item) -> bool:
    return any(word in _SHARED for word in item.linkage)


def _is_declaration(item) -> bool:
    if isinstance(item, ast.Function):
        return item.body is None
    return isinstance(item, ast.Variable) and "extern" in item.linkage


def _check_visible_once(modules: list[ast.Module]) -> None:
    seen: set[str] = set()
    for module in modules:
        for item in module.items:
            if isinstance(item, ast.Function | ast.Variable) and "visible" in item.linkage \
                    and not _is_declaration(item):
                if item.name in seen:
                    raise CompileError(f"'{item.name}' is defined .visible in two units")
                seen.add(item.name)


def _file_index(text: str) -> int:
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else 0


def _shift_file(text: str, base: int) -> str:
    return re.sub(r"^\s*(\d+)", lambda m: str(int(m.group(1)) + base), text, count=1)


def _renamed(node, renames: dict[str, str], file_base: int):
    """`node` with every name in `renames` replaced, and `.loc` file indexes moved by
    `file_base`: a copy (the input module is left as it was)."""
    if isinstance(node, list):
        return [_renamed(n, renames, file_base) for n in node]
    if isinstance(node, tuple):
        return tuple(_renamed(n, renames, file_base) for n in node)
    if isinstance(node, ast.DebugLoc):
        text = node.text
        if file_base and text.startswith(".loc"):
            text = ".loc " + _shift_file(text[4:], file_base)
        return replace(node, text=text)
    if not is_dataclass(node) or isinstance(node, ast.Spec):
        return node
    changes = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if f.name == "name" and isinstance(value, str) and value in renames:
            changes[f.name] = renames[value]
        elif isinstance(value, list | tuple) or is_dataclass(value):
            new = _renamed(value, renames, file_base)
            if new is not value:
                changes[f.name] = new
    return replace(node, **changes) if changes else node
