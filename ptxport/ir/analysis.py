"""Facts about IR functions that several tools need (inspect, the runtime's argument checks)."""

from __future__ import annotations

from ptxport.ir import nodes as ir

__all__ = ["pointer_parameters"]


def pointer_parameters(f: ir.Function) -> dict[str, str]:
    """Which parameters hold addresses, and the evidence: a `.ptr` attribute, or a value
    loaded from the parameter that (through mov/cvta/add/sub) becomes an address."""
    found = {p.name: "ptr attribute" for p in f.params if p.ptr_space or p.ptr_align}
    origin: dict[int, str] = {}  # id(register) -> parameter it was derived from
    by_name = {p.name: p for p in f.params}
    for _ in range(2):  # twice, so that values carried around loops are seen
        for inst in f.instructions():
            ops = inst.operands
            if not ops or not isinstance(ops[0], ir.Register):
                continue
            if inst.opcode == "ld" and inst.spec.get("space") == "param" and len(ops) > 1:
                src = ops[1]
                if isinstance(src, ir.Address) and isinstance(src.base, ir.Variable) \
                        and src.base.name in by_name and src.base.type.bits == 64:
                    origin[id(ops[0])] = src.base.name
            elif inst.opcode in ("mov", "cvta", "add", "sub"):
                for src in ops[1:]:
                    if isinstance(src, ir.Register) and id(src) in origin:
                        origin[id(ops[0])] = origin[id(src)]
                        if inst.opcode == "cvta":
                            found.setdefault(origin[id(src)], "converted with cvta")
    for inst in f.instructions():
        for value in inst.operands:
            if isinstance(value, ir.Address) and isinstance(value.base, ir.Register):
                name = origin.get(id(value.base))
                if name is not None:
                    found.setdefault(name, "used as an address")
    return found
