"""How a device group splits one launch, and how it merges its members' writes.

plan_launch() decides, from the kernel's IR (ptxport.passes.block_writes) and the launch's
arguments, whether the launch is split, into which boxes of blocks (whole blocks, along the
grid's outermost axis of more than one block, in proportion to each member's speed), and how
each buffer the kernel writes is merged:

- "ranges": every store to the buffer is an affine function of the block and thread index,
  and the byte ranges the members' boxes may write do not overlap: each member's ranges are
  taken from its copy.
- "mask": anything else: each member's copy is compared with the buffer as it was before the
  launch, and the bytes that changed are taken; two members changing one byte to different
  values is a WriteConflictError naming the kernel, the argument and the byte.
- "atomic": the buffer is only updated by global atomics of one associative, commutative
  operation: each member starts from the operation's identity and the partial results are
  combined into the original in member order (so float additions are made in a fixed order).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from ptxport.errors import UnsupportedFeatureError, WriteConflictError
from ptxport.ir import nodes as ir
from ptxport.passes.block_writes import (
    HOSTMEM,
    UNKNOWN,
    kernel_writes,
    load_offsets,
    store_offsets,
)

__all__ = ["BufferMerge", "Plan", "changed_ranges", "identity", "merge_buffer",
           "merge_ranges_into", "plan_launch",
           "split_units", "subtract_ranges", "union_ranges"]


@dataclass
class BufferMerge:
    mode: str                                   # "ranges", "mask" or "atomic"
    ranges: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # member -> ranges
    op: str = ""                                # atomic: add, min, max, and, or, xor
    dtype: np.dtype | None = None               # atomic: the element type
    arg: int = 0                                # an argument index that passes the buffer


@dataclass
class Plan:
    """boxes: (member, first block (x, y, z), sub-grid (x, y, z)); merges by buffer key."""

    split: bool
    reason: str = ""
    boxes: list[tuple[int, tuple[int, int, int], tuple[int, int, int]]] = field(
        default_factory=list)
    merges: dict[int, BufferMerge] = field(default_factory=dict)
    written: set[int] | None = None             # buffer keys a whole launch may write
    # key -> member -> the byte ranges its blocks may read or write, of the buffers a member
    # needs only in part (others: whole)
    needs: dict[int, dict[int, list[tuple[int, int]]]] = field(default_factory=dict)


_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_NUMPY = {"u": "uint", "s": "int", "b": "uint", "f": "float"}


def _writes(kernel):
    found = _WRITES.get(kernel._function)
    if found is None:
        pointers = {a.name for a in kernel.arguments_info if a.pointer is not False}
        found = _WRITES[kernel._function] = kernel_writes(
            kernel.object_code.module, kernel.name, pointers)
    return found


def address_fields(kernel) -> set[str]:
    """The structure fields (block_writes.field_token) `kernel` uses as addresses."""
    return _writes(kernel).fields


def _mentions_module_globals(f: ir.Function) -> bool:
    def named(v) -> bool:
        if isinstance(v, ir.Address):
            v = v.base
        if isinstance(v, ir.SymbolAddress):
            v = v.target
        return isinstance(v, ir.Variable) and v.space == "global"
    return any(named(o) for inst in f.instructions() for o in inst.operands)


def split_units(units: int, speeds: list[float]) -> list[tuple[int, int]]:
    """[first, end) of each member's share of `units` rows, in proportion to `speeds`
    (largest remainders get the rows left over)."""
    total = sum(speeds)
    exact = [units * s / total for s in speeds]
    counts = [int(e) for e in exact]
    if units >= len(speeds):   # every member keeps at least one row, so its speed is measured
        counts = [max(1, c) for c in counts]
        while sum(counts) > units:
            counts[counts.index(max(counts))] -= 1
    order = sorted(range(len(speeds)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in order[:units - sum(counts)]:
        counts[i] += 1
    out, first = [], 0
    for count in counts:
        out.append((first, first + count))
        first += count
    return out


def plan_launch(kernel, config, args: list, keys: dict[int, int], sizes: dict[int, int],
                speeds: list[float], offsets: dict[int, int] | None = None,
                fields: dict[str, tuple[int, int, int]] | None = None) -> Plan:
    """The plan of one launch. `args` are the launch's arguments; `keys` maps an argument
    index to the key of the group buffer it passes, `sizes` a key to the buffer's size,
    `offsets` an argument index to the byte of its buffer it points at (0 if absent),
    `fields` a structure field's token (block_writes.field_token) to (argument index, key,
    offset) of the group buffer it holds the address of."""
    writes = _writes(kernel)
    names = [a.name for a in kernel.arguments_info]
    by_param = {names[i]: key for i, key in keys.items()}
    by_param.update({token: key for token, (_, key, _) in (fields or {}).items()})
    for inst, tokens in writes.field_accesses:
        if not tokens & set(by_param):    # (other fields may be sizes or pitches in it)
            _refuse_untranslated(kernel, inst)
    # (argument index, key) of every buffer the launch passes, a structure's fields' too
    passed = [*keys.items(), *((index, key) for index, key, _ in (fields or {}).values())]
    written = writes.written_params()
    whole_written = {key for _, key in passed} if written is None else \
        {by_param[p] for p in written if p in by_param}
    whole_written |= {by_param[a.param] for a in writes.atomics if a.param in by_param}

    def whole(reason: str) -> Plan:
        return Plan(False, f"kernel {kernel.name}: {reason}", written=whole_written)

    if writes.untranslated:
        _refuse_untranslated(kernel, writes.untranslated[0])
    if config.is_cooperative:
        return whole("a cooperative launch (grid-wide synchronisation) is never split")
    if writes.refusal is not None:
        return whole(writes.refusal)
    if _mentions_module_globals(writes.function):
        return whole("it uses module variables (__device__), of which each member has its "
                     "own copy")
    if any(a.param not in by_param for a in writes.atomics if a.merge):
        return whole("an atomic's address comes from a parameter no group buffer is passed to")
    refused = next((a for a in writes.atomics if a.merge is None), None)
    if refused is not None:
        return whole(refused.why)
    axis = next((a for a in (2, 1, 0) if config.grid[a] > 1), None)
    if axis is None or len(speeds) < 2:
        return whole("a single block")
    merges = _atomic_merges(writes, by_param, sizes)
    if isinstance(merges, str):
        return whole(merges)
    boxes = []
    for member, (first, end) in enumerate(split_units(config.grid[axis], speeds)):
        if end > first:
            start = [0, 0, 0]
            grid = list(config.grid)
            start[axis], grid[axis] = first, end - first
            boxes.append((member, tuple(start), tuple(grid)))
    if len(boxes) < 2:
        return whole("one member gets every block")
    scalars = {names[i]: int(v) for i, v in enumerate(args)
               if isinstance(v, np.integer | np.bool_) and i not in keys}
    at = {names[i]: offset for i, offset in (offsets or {}).items()}
    at.update({token: offset for token, (_, _, offset) in (fields or {}).items()})
    _store_merges(writes, config, boxes, by_param, passed, sizes, scalars, merges, at)
    needs = _needs(writes, config, boxes, by_param, passed, sizes, scalars, merges, at)
    return Plan(True, boxes=boxes, merges=merges, written=set(merges), needs=needs)


def _refuse_untranslated(kernel, inst: ir.Instruction) -> None:
    """A group gives each member its own copies of the buffers passed as pointer parameters;
    an address the kernel finds in memory or in a structure argument names none of them, so
    the launch can run neither split nor whole on one member."""
    module = kernel.object_code.module
    raise UnsupportedFeatureError(
        f"{inst.spec.text} at an address that is no pointer parameter", "a device group",
        module.location(inst.pos), source=module.source_line(inst.pos),
        reason=f"kernel {kernel.name} reaches global memory through an address it loads from "
               "a buffer, or from a structure argument field that holds no buffer of the "
               "group, which a device group does not translate to its members' copies of the "
               "buffers: pass each buffer as a pointer parameter, or launch the kernel on "
               "one device")


def _atomic_merges(writes, by_param, sizes) -> dict[int, BufferMerge] | str:
    merges: dict[int, BufferMerge] = {}
    for atomic in writes.atomics:
        key = by_param[atomic.param]
        dtype = np.dtype(f"{_NUMPY[atomic.type[0]]}{atomic.type[1:]}")
        if atomic.merge in ("min", "max") and atomic.type[0] == "b":
            dtype = np.dtype(f"uint{atomic.type[1:]}")
        found = merges.setdefault(key, BufferMerge("atomic", op=atomic.merge, dtype=dtype))
        if (found.op, found.dtype) != (atomic.merge, dtype):
            return (f"parameter {atomic.param}'s buffer is updated by atomics of different "
                    f"operations or types ({found.op}.{found.dtype}, {atomic.merge}.{dtype})")
        if sizes[key] % dtype.itemsize:
            return f"parameter {atomic.param}'s buffer is not a whole number of {dtype}"
    atomic_keys = set(merges)      # (by buffer: two parameters may pass the same one)
    if not atomic_keys:
        return merges
    plain = [b for _, b in writes.stores] + list(writes.loads)
    for bases in plain:
        buffers = {by_param[p] for p in bases if p in by_param}
        if bases & {UNKNOWN, HOSTMEM} or buffers & atomic_keys:
            return ("a buffer updated by atomics may also be read or written plainly, which "
                    "would see the partial results")
    return merges


def _store_merges(writes, config, boxes, by_param, passed, sizes, scalars, merges,
                  at: dict[str, int]) -> None:
    written = writes.written_params()
    targets = {key for _, key in passed} if written is None else \
        {by_param[p] for p in written if p in by_param}
    forms = store_offsets(writes, config.grid, config.block, scalars, set(by_param))
    args_of = {}
    for index, key in passed:
        args_of.setdefault(key, index)
    for key in targets - set(merges):
        params = {p for p, k in by_param.items() if k == key}
        stores = [form for form, (_, bases) in zip(forms, writes.stores, strict=True)
                  if bases & params or bases & {UNKNOWN, HOSTMEM}]
        merge = BufferMerge("mask", arg=args_of[key])
        if stores and not writes.opaque_writes and all(f is not None for f in stores):
            merge = _ranges(stores, boxes, config.block, sizes[key], args_of[key], at) or merge
        merges[key] = merge


def _needs(writes, config, boxes, by_param, passed, sizes, scalars, merges,
           at: dict[str, int]) -> dict:
    """Plan.needs: the buffers whose every load is affine in the block and thread index
    and which are not merged by masks or atomics (a member's part of those is its whole
    copy); a member needs the bytes its blocks load, and those they may write (a ranges
    merge takes them from its copy, unwritten bytes included)."""
    if writes.other_reads:
        return {}
    forms = load_offsets(writes, config.grid, config.block, scalars, set(by_param))
    needs = {}
    for key in {key for _, key in passed}:
        merge = merges.get(key)
        if merge is not None and merge.mode != "ranges":
            continue
        params = {p for p, k in by_param.items() if k == key}
        loads = [form for form, (_, bases) in zip(forms, writes.load_insts, strict=True)
                 if bases & params or bases & {UNKNOWN, HOSTMEM}]
        if any(form is None for form in loads):
            continue
        needs[key] = {}
        for member, first, grid in boxes:
            box = [(f, f + n - 1) for f, n in zip(first, grid, strict=True)]
            spans = [tuple(end + at.get(form.param, 0) for end in form.hull(box, config.block))
                     for form in loads]
            spans = [(max(0, lo), min(sizes[key], hi)) for lo, hi in spans
                     if hi > 0 and lo < sizes[key]]
            needs[key][member] = union_ranges(spans + (merge.ranges[member] if merge else []))
    return needs


def _ranges(stores, boxes, block, size, arg, at: dict[str, int]) -> BufferMerge | None:
    """A "ranges" merge when the members' write ranges are disjoint, else None; `at`: the
    byte of its buffer each pointer parameter points at."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for member, first, grid in boxes:
        box = [(f, f + n - 1) for f, n in zip(first, grid, strict=True)]
        spans = [tuple(end + at.get(form.param, 0) for end in form.hull(box, block))
                 for form in stores]
        ranges[member] = [(max(0, lo), min(size, hi)) for lo, hi in spans if hi > 0 and lo < size]
    members = list(ranges)
    for i, a in enumerate(members):
        for b in members[i + 1:]:
            for lo, hi in ranges[a]:
                if any(lo < h and l2 < hi for l2, h in ranges[b]):
                    return None
    return BufferMerge("ranges", ranges=ranges, arg=arg)


def identity(op: str, dtype: np.dtype, size: int) -> np.ndarray:
    """A buffer of `size` bytes of `op`'s identity element of `dtype`."""
    n = size // dtype.itemsize
    if op in ("add", "or", "xor"):
        value = -0.0 if dtype.kind == "f" else 0
    elif op == "and":
        return np.full(size, 0xFF, np.uint8)
    else:
        info = np.iinfo(dtype)
        value = info.max if op == "min" else info.min
    return np.full(n, value, dtype).view(np.uint8)


_COMBINE = {"min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
            "or": np.bitwise_or, "xor": np.bitwise_xor}


def merge_buffer(merge: BufferMerge, before: np.ndarray, parts: dict[int, object],
                 kernel: str) -> np.ndarray:
    """The buffer after the launch, from its contents before (uint8) and each member's
    part: for "ranges", the list of arrays of its ranges; for "atomic", its whole copy; for
    "mask", its whole copy or (ranges, pieces) of the ranges that may have changed."""
    if merge.mode == "ranges":
        return merge_ranges_into(before.copy(), merge, parts)
    if merge.mode == "atomic":
        dtype = merge.dtype
        result = before.view(dtype).copy()
        for member in sorted(parts):
            partial = parts[member].view(dtype)
            if merge.op == "add":
                if dtype.kind == "f":
                    result = result + partial
                else:
                    unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
                    result = (result.view(unsigned) + partial.view(unsigned)).view(dtype)
            else:
                result = _COMBINE[merge.op](result, partial)
        return result.view(np.uint8)
    return _merge_masks(merge, before, parts, kernel)


def merge_ranges_into(result: np.ndarray, merge: BufferMerge, parts: dict) -> np.ndarray:
    """Write each member's pieces of a "ranges" merge into `result` (they are disjoint, so
    the buffer itself may be `result`)."""
    for member, pieces in parts.items():
        for (lo, hi), piece in zip(merge.ranges[member], pieces, strict=True):
            result[lo:hi] = piece
    return result


def _merge_masks(merge: BufferMerge, before: np.ndarray, parts: dict, kernel: str) -> np.ndarray:
    """A member's part is its whole copy, or (ranges, pieces): the only byte ranges of its
    copy that may differ from `before` (changed_ranges). Bytes are compared only where
    two members' ranges meet (CHUNKs both sent); elsewhere a piece is copied whole (its
    unchanged bytes equal `before`). A byte an earlier member wrote is one that differs
    from `before` in the result."""
    result = before.copy()
    touched = np.zeros(-(-before.size // CHUNK), bool)     # chunks an earlier member sent
    for member in sorted(parts):
        part = parts[member]
        ranges, pieces = ([(0, before.size)], [part]) if isinstance(part, np.ndarray) else part
        for (lo, hi), data in zip(ranges, pieces, strict=True):
            chunks = slice(lo // CHUNK, -(-hi // CHUNK))
            if not touched[chunks].any():
                result[lo:hi] = data
            else:
                _merge_bytes(merge, before, result, lo, data, kernel)
            touched[chunks] = True
    return result


def _merge_bytes(merge: BufferMerge, before: np.ndarray, result: np.ndarray, lo: int,
                 data: np.ndarray, kernel: str) -> None:
    old, now = before[lo:lo + data.size], result[lo:lo + data.size]
    changed = data != old
    clash = changed & (now != old) & (data != now)
    if clash.any():
        offset = lo + int(np.flatnonzero(clash)[0])
        raise WriteConflictError(
            f"kernel {kernel}: two members of the device group wrote different values to "
            f"byte {offset} of argument {merge.arg} (a buffer of {before.size} bytes): "
            f"{result[offset]:#04x} and {data[offset - lo]:#04x}; the blocks of this launch "
            "write the same memory, so its result depends on their order: launch it on one "
            "device")
    np.copyto(now, data, where=changed)


CHUNK = 4096       # the granularity at which changed_ranges looks for changes


def changed_ranges(before: np.ndarray, after: np.ndarray, chunk: int = CHUNK) -> list:
    """The [lo, hi) byte ranges, in whole `chunk`s, outside which `after` equals `before`
    (two uint8 arrays of one size): what a member sends back of a "mask" buffer."""
    size = before.size
    whole = size - size % chunk
    step = 8 if chunk % 8 == 0 else 1
    word = np.uint64 if step == 8 else np.uint8
    dirty = (before[:whole].view(word) != after[:whole].view(word)).reshape(
        -1, chunk // step).any(axis=1)
    if whole < size:
        dirty = np.append(dirty, bool((before[whole:] != after[whole:]).any()))
    edges = np.flatnonzero(np.diff(np.concatenate(([0], dirty.view(np.int8), [0]))))
    return [(int(lo) * chunk, min(size, int(hi) * chunk))
            for lo, hi in zip(edges[::2], edges[1::2], strict=True)]


def union_ranges(ranges) -> list[tuple[int, int]]:
    """[lo, hi) ranges sorted, with those that overlap or touch joined."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[1] > r[0]):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def subtract_ranges(ranges, cut) -> list[tuple[int, int]]:
    """The bytes of `ranges` outside `cut` (lists of [lo, hi) ranges)."""
    out = []
    cut = union_ranges(cut)
    for lo, hi in union_ranges(ranges):
        for c_lo, c_hi in cut:
            if c_hi <= lo or c_lo >= hi:
                continue
            if c_lo > lo:
                out.append((lo, c_lo))
            lo = max(lo, c_hi)
            if lo >= hi:
                break
        if lo < hi:
            out.append((lo, hi))
    return out
