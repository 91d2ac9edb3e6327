"""`ptxport inspect`: what a PTX module (or CUDA C++ source) contains, as a report.

The report is a plain dict that `--json` prints as is; its schema is documented in
docs/inspect.md and versioned by its "schema" field. The text form is rendered from the same
dict, so the two never disagree.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ptxport.codegen import support
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import pointer_parameters
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.isa import OPS
from ptxport.ptx.parser import parse

__all__ = ["SCHEMA", "inspect_file", "inspect_module", "inspect_ptx", "load", "render_text"]

SCHEMA = "ptxport.inspect/1"


def load(path: str | Path, arch: str = "sm_90", options=None) -> tuple[ir.Module, str]:
    """The verified IR of a .ptx file, or of a .cu file compiled by NVRTC (with NvrtcOptions
    `options`, else for `arch`), and which of the two it was ("ptx" or "cuda")."""
    path = Path(path)
    text = path.read_text()
    source_kind = "ptx"
    if path.suffix == ".cu":
        from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx

        text = compile_to_ptx(text, path.name, options or NvrtcOptions(arch=arch))
        source_kind = "cuda"
    module = build(parse(text, str(path)))
    verify(module)
    return module, source_kind


def inspect_file(path: str | Path, arch: str = "sm_90") -> dict:
    """Inspect a .ptx file, or a .cu file after compiling it with NVRTC for `arch`."""
    return inspect_module(*load(path, arch))


def inspect_ptx(text: str, filename: str = "<ptx>") -> dict:
    """Parse, build and verify PTX text; report its functions, memory and instructions."""
    module = build(parse(text, filename))
    verify(module)
    return inspect_module(module, "ptx")


def inspect_module(module: ir.Module, source_kind: str = "ptx") -> dict:
    """The report for a verified IR module."""
    filename = module.source.name if module.source else "<ptx>"
    functions = [_function(module, f) for f in module.functions.values()]
    census: Counter = Counter()
    for f in functions:
        census.update(f["census"])
    return {
        "schema": SCHEMA,
        "file": filename,
        "source_kind": source_kind,
        "ptx_version": f"{module.version[0]}.{module.version[1]}",
        "target": list(module.target),
        "address_size": module.address_size,
        "globals": [_variable(v) for v in module.globals.values()],
        "functions": functions,
        "census": dict(sorted(census.items())),
        "targets": {t: _target_support(module, t) for t in support.TARGETS},
    }


def _line(module: ir.Module, pos: int) -> int:
    location = module.location(pos)
    return location.line if location else 0


def _variable(v: ir.Variable) -> dict:
    return {
        "name": v.name,
        "space": v.space,
        "type": (f"v{v.vector}." if v.vector else "") + v.type.name,
        "elements": None if v.unsized else v.elements,
        "size": v.size,
        "align": v.alignment,
        "linkage": list(v.linkage),
        "extern": v.is_extern,
        "initialized": v.init is not None,
    }


def _parameter(v: ir.Variable, pointer: str | None) -> dict:
    return {
        "name": v.name,
        "space": v.space,
        "type": (f"v{v.vector}." if v.vector else "") + v.type.name,
        "size": v.size,
        "align": v.alignment,
        "array": v.elements if v.dims else None,
        "pointer": pointer is not None,
        "pointer_evidence": pointer,
        "pointee_space": v.ptr_space,
    }


def _function(module: ir.Module, f: ir.Function) -> dict:
    pointers = pointer_parameters(f)
    memory = {space: [_variable(v) for v in f.variables.values() if v.space == space]
              for space in ("shared", "local", "const")}
    registers = Counter(r.type.name for r in f.registers.values())
    opcodes = Counter(i.opcode for i in f.instructions())
    census = Counter()
    for opcode, n in opcodes.items():
        census[OPS[opcode].family] += n
    return {
        "name": f.name,
        "kind": "kernel" if f.is_kernel else "function",
        "line": _line(module, f.pos),
        "linkage": list(f.linkage),
        "declaration": f.is_declaration,
        "parameters": [_parameter(p, pointers.get(p.name)) for p in f.params],
        "returns": [_parameter(p, None) for p in f.returns],
        "directives": {k: list(v) for k, v in f.directives.items()},
        "registers": {"count": len(f.registers), "by_type": dict(sorted(registers.items()))},
        "shared": memory["shared"],
        "local": memory["local"],
        "const": memory["const"],
        "static_shared_bytes": sum(v["size"] for v in memory["shared"]),
        "local_bytes": sum(v["size"] for v in memory["local"]),
        "dynamic_shared": any(v["extern"] for v in memory["shared"]),
        "instructions": sum(opcodes.values()),
        "census": dict(sorted(census.items())),
        "opcodes": dict(sorted(opcodes.items())),
    }


def _target_support(module: ir.Module, target: str) -> dict:
    reasons = support.unsupported(target, module)
    unsupported: dict[str, dict] = {}
    for f in module.functions.values():
        for inst in f.instructions():
            reason = reasons.get(id(inst))
            if reason is not None:
                entry = unsupported.setdefault(inst.spec.text, {
                    "instruction": inst.spec.text, "reason": reason, "lines": [],
                    "source_lines": []})
                entry["lines"].append(_line(module, inst.pos))
                source = module.source_line(inst.pos)
                entry["source_lines"].append(
                    None if source is None else {"file": source[0], "line": source[1]})
    return {
        "implemented": support.implemented(target),
        "unsupported_count": sum(len(e["lines"]) for e in unsupported.values()),
        "unsupported": sorted(unsupported.values(), key=lambda e: e["instruction"]),
    }


def render_text(report: dict) -> str:
    """The report as a human reads it."""
    out = [f"{report['file']}: PTX {report['ptx_version']} for {', '.join(report['target'])}, "
           f"{report['address_size']}-bit addresses"
           + (" (compiled from CUDA C++ by NVRTC)" if report["source_kind"] == "cuda" else "")]
    for g in report["globals"]:
        out.append(f"  .{g['space']} {g['name']}: {g['type']}"
                   f"{'' if g['elements'] in (None, 1) else '[' + str(g['elements']) + ']'}"
                   f", {g['size']} bytes, align {g['align']}"
                   + (", initialized" if g["initialized"] else "")
                   + (", extern" if g["extern"] else ""))
    for f in report["functions"]:
        out.append("")
        if f["declaration"]:
            out.append(f"{f['kind']} {f['name']} (declared, line {f['line']})")
            continue
        out.append(f"{f['kind']} {f['name']} (line {f['line']}): {f['instructions']} instructions, "
                   f"{f['registers']['count']} registers")
        for p in f["parameters"]:
            what = f"pointer ({p['pointer_evidence']})" if p["pointer"] else "value"
            array = f"[{p['array']}]" if p["array"] else ""
            out.append(f"  param {p['name']}: {p['type']}{array}, {p['size']} bytes, "
                       f"align {p['align']}, {what}")
        if f["directives"]:
            out.append("  directives: " + ", ".join(
                f"{k} {','.join(map(str, v))}".strip() for k, v in f["directives"].items()))
        if f["registers"]["by_type"]:
            out.append("  registers: " + ", ".join(
                f"{n} .{t}" for t, n in f["registers"]["by_type"].items()))
        for space in ("shared", "local", "const"):
            for v in f[space]:
                size = "dynamic" if v["elements"] is None else f"{v['size']} bytes"
                out.append(f"  .{space} {v['name']}: {size}, align {v['align']}")
        if f["census"]:
            out.append("  census: " + ", ".join(f"{k} {n}" for k, n in f["census"].items()))
    out.append("")
    out.append("census: " + (", ".join(f"{k} {n}" for k, n in report["census"].items())
                             or "no instructions"))
    for target, info in report["targets"].items():
        if not info["unsupported"]:
            out.append(f"target {target}: every instruction supported")
            continue
        if not info["implemented"]:
            out.append(f"target {target}: no code generator yet, so none of the "
                       f"{info['unsupported_count']} instructions is supported")
            continue
        out.append(f"target {target}: {info['unsupported_count']} instructions not supported")
        for entry in info["unsupported"]:
            out.append(f"  {entry['instruction']}: {_places(entry)}")
    return "\n".join(out) + "\n"


def _places(entry: dict) -> str:
    """Where an unsupported instruction appears: `line 3, 9` in the PTX, or, where the PTX
    has line information, `kernel.cu:42 (PTX line 3), ...` (the user's line first); eight
    places at most, then the count."""
    lines, sources = entry["lines"], entry["source_lines"]
    if any(sources):
        places = [f"line {line}" if source is None else
                  f"{source['file']}:{source['line']} (PTX line {line})"
                  for line, source in zip(lines, sources, strict=True)]
    else:
        places = [str(line) for line in lines]
        places[0] = f"line {places[0]}"
    shown = ", ".join(places[:8])
    return shown + (f", ... ({len(lines)} in all)" if len(lines) > 8 else "")
