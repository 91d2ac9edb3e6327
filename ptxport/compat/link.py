"""Links the PTX of several translation units into one module, as nvlink links their code.

A program built with `nvcc -rdc=true` registers, through cudart, one fat binary per
translation unit (the relocatable objects of its `__nv_relfatbin` section); each unit's PTX
declares what it uses from the others (`.extern .func`, `.extern .global`). ptxport compiles
one Program over the linked text, in which ptxport's PTX front end resolves each `.extern`
declaration to the definition of the same name (ir/from_ptx.py), so that a kernel calls
another unit's device function and every unit sees one copy of each `__device__` variable.

Linking, as the PTX ISA's linkage directives say (section 11.6: .extern, .visible, .weak):
- the first unit's `.version`/`.target`/`.address_size` stand for all (the newest `.version`);
- a `.weak` symbol defined in several units keeps its first definition;
- a symbol without linkage is private to its unit: where another unit defines the same name,
  it is renamed (`NAME__unitK`);
- `.file` numbers are renumbered per unit, so that `.loc` lines keep naming the right file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["link_ptx", "needs_linking"]

_HEADER = re.compile(r"^\s*\.(version|target|address_size)\b")
_LINE_DIRECTIVE = re.compile(r"^\s*\.(version|target|address_size|file)\b")
_LINKAGE = ("visible", "extern", "weak", "common")
_FUNCTION_NAME = re.compile(r"\.(?:entry|func)\s*(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$]*)")
_VARIABLE_NAME = re.compile(r"([A-Za-z_$%][\w$]*)\s*(?:\[[^\]]*\]\s*)*$")


@dataclass
class _Chunk:
    """One module-scope statement: a directive line, a declaration or a definition."""

    text: str
    name: str = ""
    linkage: str = ""      # one of _LINKAGE, or "" (private to its unit)
    defines: bool = False  # a definition (a function with a body, a non-extern variable)


def _code(line: str) -> str:
    return line.split("//", 1)[0]


def _chunks(ptx: str) -> list[_Chunk]:
    """The module-scope statements of `ptx`, each with what it declares."""
    chunks, current, depth, braced = [], [], 0, False
    for line in ptx.splitlines():
        if not current and depth == 0 and (_LINE_DIRECTIVE.match(line) or not line.strip()):
            chunks.append(_Chunk(line))
            continue
        current.append(line)
        code = _code(line)
        depth += code.count("{") - code.count("}")
        braced = braced or "{" in code
        if depth == 0 and (code.rstrip().endswith(";") or braced and "}" in code):
            chunks.append(_described("\n".join(current)))
            current, braced = [], False
    if current:
        chunks.append(_Chunk("\n".join(current)))
    return chunks


def _described(text: str) -> _Chunk:
    code = "\n".join(_code(line) for line in text.splitlines())
    words = re.findall(r"\.(\w+)", code.split("(", 1)[0].split("{", 1)[0])
    linkage = next((w for w in words if w in _LINKAGE), "")
    if "entry" in words or "func" in words:
        match = _FUNCTION_NAME.search(code)
        return _Chunk(text, match[1] if match else "", linkage, "{" in code)
    if any(space in words for space in ("global", "const", "shared")):
        match = _VARIABLE_NAME.search(code.split("=", 1)[0].rstrip().rstrip(";"))
        return _Chunk(text, match[1] if match else "", linkage, linkage != "extern")
    return _Chunk(text)


def needs_linking(modules: list[str]) -> bool:
    """Whether one unit declares `.extern` a symbol that another unit defines."""
    if len(modules) < 2:
        return False
    units = [_chunks(ptx) for ptx in modules]
    defined = [{c.name for c in chunks if c.defines} for chunks in units]
    for k, chunks in enumerate(units):
        wanted = {c.name for c in chunks if c.linkage == "extern" and c.name}
        if any(wanted & names for j, names in enumerate(defined) if j != k):
            return True
    return False


def _rename(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    pattern = re.compile(r"(?<![\w$%])(" + "|".join(map(re.escape, names)) + r")(?![\w$])")
    return pattern.sub(lambda m: names[m[1]], text)


def _renumbered_files(text: str, offset: int) -> str:
    if not offset:
        return text
    text = re.sub(r"^(\s*\.file\s+)(\d+)", lambda m: f"{m[1]}{int(m[2]) + offset}", text,
                  flags=re.M)
    return re.sub(r"(^\s*\.loc\s+|\binlined_at\s+)(\d+)",
                  lambda m: f"{m[1]}{int(m[2]) + offset}", text, flags=re.M)


def _version(chunk: _Chunk) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", chunk.text))


def link_ptx(modules: list[str]) -> str:
    """One PTX module made of `modules` (translation units), linked as described above."""
    units = [_chunks(ptx) for ptx in modules]
    owners: dict[str, list[int]] = {}
    for k, chunks in enumerate(units):
        for name in {c.name for c in chunks if c.defines}:
            owners.setdefault(name, []).append(k)
    headers = [c for c in units[0] if _HEADER.match(c.text)]
    versions = [c for chunks in units for c in chunks if c.text.strip().startswith(".version")]
    newest = max(versions, key=_version, default=None)
    lines = [newest.text if newest and c.text.strip().startswith(".version") else c.text
             for c in headers]
    weak_done: set[str] = set()
    files = 0
    for k, chunks in enumerate(units):
        private = {c.name: f"{c.name}__unit{k}" for c in chunks
                   if c.defines and not c.linkage and len(owners.get(c.name, ())) > 1}
        numbers = [int(n) for c in chunks
                   for n in re.findall(r"^\s*\.file\s+(\d+)", c.text, re.M)]
        for chunk in chunks:
            if _HEADER.match(chunk.text):
                continue
            if chunk.linkage == "weak" and chunk.defines:
                if chunk.name in weak_done:
                    continue
                weak_done.add(chunk.name)
            lines.append(_renumbered_files(_rename(chunk.text, private), files))
        files += max(numbers, default=0)
    return "\n".join(lines) + "\n"
