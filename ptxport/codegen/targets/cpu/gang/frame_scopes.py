"""The warp frame as its own alias scope: every load and store of the gang function through
its frame argument gets `!alias.scope`, every other load, store and masked access
`!noalias` of that scope.

The frame argument is `noalias` already, but LLVM turns that into scopes when it inlines the
gang function only for accesses whose pointer the frame cannot have reached, and it gives
up following the frame's uses after 100 of them (capture tracking): a gang function has
hundreds, so a store of the kernel's (shared memory, global) seemed to LLVM to clobber the
frame, and each register kept in the frame was loaded again after it, with all that was
computed from it (a stencil's halo predicates, four times a warp). The scopes say what the
attribute says, once per access, without that search.
"""

from __future__ import annotations

from llvmlite import ir as ll

__all__ = ["scope_frame"]

# intrinsics that touch memory through their pointer arguments only
_MEMORY_INTRINSICS = ("llvm.masked.load.", "llvm.masked.store.", "llvm.masked.gather.",
                      "llvm.masked.scatter.", "llvm.masked.expandload.",
                      "llvm.masked.compressstore.", "llvm.prefetch.",
                      # (the address check: the context, the allocation table and the
                      # site's cache slot in the context, target.py's check_function)
                      "ptxport.check")


_POINTER_CASTS = ("bitcast", "addrspacecast")


def _is_step(inst) -> bool:
    """A GEP or a pointer cast: an address into whatever its first operand points into."""
    return isinstance(inst, ll.GEPInstr) or (isinstance(inst, ll.CastInstr)
                                             and inst.opname in _POINTER_CASTS)


def _root(value):
    """The value a pointer is a GEP or pointer cast of (through any number of them)."""
    while _is_step(value):
        value = value.operands[0]
    return value


def _frame_derived(fn: ll.Function, frame: ll.Argument) -> set[int] | None:
    """ids of the instructions that are GEPs or pointer casts of the frame, or None where
    the frame (or a pointer into it) goes anywhere else than a load's or store's address:
    an escape, a phi or select, a call, a ptrtoint, where the scopes could be wrong."""
    derived = {id(inst) for block in fn.blocks for inst in block.instructions
               if _is_step(inst) and _root(inst) is frame}
    for block in fn.blocks:
        for inst in block.instructions:
            for i, op in enumerate(inst.operands):
                if op is not frame and id(op) not in derived:
                    continue
                if i == 0 and (_is_step(inst) or isinstance(inst, ll.LoadInstr)):
                    continue
                if i == 1 and isinstance(inst, ll.StoreInstr):
                    continue
                return None
    return derived


def scope_frame(fn: ll.Function, frame_index: int) -> None:
    """Give `fn`'s accesses through argument `frame_index` (its warp frame) one alias scope
    and all its other loads, stores and masked accesses the frame's scope as `!noalias`
    (nothing where the frame's pointers go anywhere else than addresses of accesses)."""
    frame = fn.args[frame_index]
    derived = _frame_derived(fn, frame)
    if derived is None:
        return
    module = fn.module
    domain = module.add_metadata([ll.MetaDataString(module, f"ptxport.{fn.name}.frames")])
    scope = module.add_metadata([ll.MetaDataString(module, f"ptxport.{fn.name}.frame"),
                                 domain])
    scopes = module.add_metadata([scope])

    def in_frame(pointer) -> bool:
        return pointer is frame or id(pointer) in derived

    for block in fn.blocks:
        for inst in block.instructions:
            if isinstance(inst, ll.LoadInstr):
                pointers = [inst.operands[0]]
            elif isinstance(inst, ll.StoreInstr):
                pointers = [inst.operands[1]]
            elif (isinstance(inst, ll.CallInstr) and isinstance(inst.callee, ll.Function)
                  and inst.callee.name.startswith(_MEMORY_INTRINSICS)):
                pointers = []       # (none of their arguments is the frame: checked above)
            else:
                continue
            if any(in_frame(p) for p in pointers):
                inst.set_metadata("alias.scope", scopes)
            else:
                inst.set_metadata("noalias", scopes)
