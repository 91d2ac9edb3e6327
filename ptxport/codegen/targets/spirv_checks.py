"""Bounds checks of the SPIR-V target: every global, const, generic and shared access of a
kernel is checked against the memory the launch may touch, and a bad one is skipped and
reported, as the CPU device does (IllegalAddressError), instead of corrupting the device.

The opencl backend gives each launch a `checks` buffer (CHECKS_* below, 8-byte words):
the fault record (the first bad access: what, where, which work-item), the launch's table of
allocations (sorted [start, end) pairs; the "svm" scheme's every allocation of the context),
and one [lo, hi) per 8-byte parameter slot: the allocation the slot's address lies in
(absolute, or relative to the slot's buffer argument on the "translated" scheme; empty for
other values).

An access is allowed when it lies inside one of:
- a parameter slot's allocation (the fast path, checked inline in kernels: where kernels
  find their pointers, so nearly every access ends here);
- a window of the thread's own memory: the CTA's shared memory and the kernel's parameters
  (generic addresses), and each function's .local variables, linked from the function to its
  callers (`nodes`, below), so that a device function may use a caller's local array;
- the module's .global/.const variables (its variable block, spirv_globals.py), checked
  inline as well;
- an allocation of the table (binary search).
Shared-space addresses are offsets into the CTA's shared memory, checked against its size.
.param and .local accesses are not checked (as on the CPU device).

A bad access records its fault (the first one of the launch wins, by compare-and-swap; a
failed assert, spirv_assert.py, records one of its own kind in the same record) and is not
performed: nothing is written, and the registers it would load get 0. The work-item
goes on (OpenCL cannot end a launch, and the others may wait for it at a barrier); the
backend raises after the launch. Device functions get the checks buffer and their caller's
node as two hidden trailing parameters.

A node (private i64 words): [0] the caller's node (null at the kernel), [1] the window count
w, [2] whether the function holds `alloca` memory, [3 + 2i], [4 + 2i] window i's [lo, hi).
`alloca` memory has no bounds known here: where a node on the way says so, an address found
nowhere else is allowed (unchecked) rather than reported wrongly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I32, I64, FunctionLowering, const_int, value_type
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.allocation_table import search_allocations
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES

__all__ = ["CHECKS_ASSERTED", "CHECKS_HEADER", "CHECKS_HEAP", "CHECKS_LOG", "CHECKS_TABLE",
           "CHECKS_TIMER",
           "LOG_ENTRY", "Fault", "checked", "search_function",
           "hidden_types", "enter_device_function", "enter_kernel", "read_fault",
           "record_assert"]

# The checks buffer, in 8-byte words: the fault record, the word that says an assert failed
# (set by every failed assert, not only the recorded one), where the assert log starts (0:
# none), the device heap's address (spirv_heap.py; 0: none), the device clock's calibration
# for %globaltimer (3 words, runtime/backends/opencl_timer.py; zeros when the kernel does not
# read it), then the table (its length at CHECKS_TABLE, its pairs after it), then the
# parameter slots' ranges, then the assert log.
CHECKS_INFO, CHECKS_ADDRESS, CHECKS_GROUP, CHECKS_LOCAL = 0, 1, 2, 5
CHECKS_ASSERTED = 8
CHECKS_LOG = 9
CHECKS_HEAP = 10
CHECKS_TIMER = 11
CHECKS_TABLE = 14
CHECKS_HEADER = CHECKS_TABLE + 1
# The assert log: [count, capacity], then `capacity` entries of LOG_ENTRY words, one per failed
# assert (every work-item's, while there is room): the assert's number << 32 | the line
# __assertfail was given, the work-group's ids, the work-item's.
LOG_ENTRY = 7
# The record's info word: line << 19 | assert << 18 | shared << 17 | size << 1 | write, never
# 0 (an access has size >= 1, an assert its bit). An assert's address word holds the line
# __assertfail was given << 32 | the assert's number (KernelLayout.assertions); a trap's, TRAP.
_SIZE_BITS, _SHARED_BIT, _ASSERT_BIT, _LINE_SHIFT = 16, 17, 18, 19
# The number in an assert record that says a `trap` (no assert has it; its line is 0).
TRAP = 0xFFFFFFFF

GLOBAL, GENERIC = 1, 4
_GLOBAL_PTR = ll.PointerType(addrspace=GLOBAL)
_NODE_WINDOWS = 3      # where a node's windows start (after parent, count, alloca flag)
_PRIVATE_PTR = ll.PointerType()


@dataclass(frozen=True)
class Fault:
    """A launch's fault record: a bad access (`size` bytes at `address`, read or written,
    in shared memory or not) or a failed assert (`assertion`, its number in the kernel's
    layout, and `assert_line`, the line __assertfail was given); `line` is the PTX line,
    `group` and `local` the work-item's ids."""

    line: int
    group: tuple[int, int, int]
    local: tuple[int, int, int]
    address: int = 0
    size: int = 0
    write: bool = False
    shared: bool = False
    assertion: int | None = None
    assert_line: int = 0
    trap: bool = False


def read_fault(record: Sequence[int]) -> Fault | None:
    """The fault of a launch's record (the checks buffer's first CHECKS_HEADER words), or
    None where the launch had none."""
    info, address = int(record[CHECKS_INFO]), int(record[CHECKS_ADDRESS])
    if not info:
        return None
    group = tuple(int(v) for v in record[CHECKS_GROUP:CHECKS_GROUP + 3])
    local = tuple(int(v) for v in record[CHECKS_LOCAL:CHECKS_LOCAL + 3])
    if info >> _ASSERT_BIT & 1 and address & 0xFFFFFFFF == TRAP:
        return Fault(info >> _LINE_SHIFT, group, local, trap=True)
    if info >> _ASSERT_BIT & 1:
        line = address >> 32
        return Fault(info >> _LINE_SHIFT, group, local, assertion=address & 0xFFFFFFFF,
                     assert_line=line - (1 << 32) if line >> 31 else line)
    return Fault(info >> _LINE_SHIFT, group, local, address,
                 (info >> 1) & ((1 << _SIZE_BITS) - 1), bool(info & 1),
                 bool(info >> _SHARED_BIT & 1))


def hidden_types() -> list[ll.Type]:
    """The hidden trailing parameters of device functions: the checks buffer, the node."""
    return [_GLOBAL_PTR, _PRIVATE_PTR]


# --- where functions get their windows ----------------------------------------------------------

def enter_kernel(fl: FunctionLowering, checks: ll.Value, bases: list[ll.Value],
                 params_size: int) -> None:
    """At a kernel's entry: the parameter slots' ranges (`bases`: each slot's buffer
    argument, NULL where none) as values, and the kernel's node."""
    b = fl.b
    fl.checks = checks
    if not fl.target.bounds_checks:
        fl.check_node = ll.Constant(_PRIVATE_PTR, None)
        return
    fl.block_window = _block_window(fl)
    slots_at = b.add(b.mul(_word(b, checks, I64(CHECKS_TABLE)), I64(2)), I64(CHECKS_HEADER))
    ranges = []
    for k, base in enumerate(bases):
        offset = b.ptrtoint(base, I64)
        lo = _word(b, checks, b.add(slots_at, I64(2 * k)))
        hi = _word(b, checks, b.add(slots_at, I64(2 * k + 1)))
        ranges.append((b.add(lo, offset), b.add(hi, offset)))
    fl.slot_ranges = ranges
    shared = b.ptrtoint(b.addrspacecast(fl.shared, ll.PointerType(addrspace=GENERIC)), I64)
    params = _generic_address(fl, fl.param_buffer)
    fl.windows = [(shared, b.add(shared, b.zext(fl.shared_bytes, I64))),
                  (params, b.add(params, I64(params_size)))] + _local_windows(fl)
    # the node only matters to the device functions the kernel calls (where the slots'
    # allocations are not known otherwise on the "translated" scheme)
    fl.check_node = _node(fl, ll.Constant(_PRIVATE_PTR, None), ranges + fl.windows) \
        if _calls(fl.function) or _allocates(fl.function) else \
        ll.Constant(_PRIVATE_PTR, None)


def enter_device_function(fl: FunctionLowering) -> None:
    """At a device function's entry: its hidden parameters, and its own node where it has
    .local variables (else its caller's node serves)."""
    fl.checks, parent = fl.llfn.args[-2:]
    fl.check_node = parent
    if not fl.target.bounds_checks:
        return
    fl.block_window = _block_window(fl)
    fl.windows = windows = _local_windows(fl)
    fl.check_node = parent if not windows and not _allocates(fl.function) else \
        _node(fl, parent, windows)


def _block_window(fl: FunctionLowering) -> list[tuple[ll.Value, ll.Value]]:
    """The module's variable block (spirv_globals.py) as a window, where it has variables."""
    size = fl.target.variables.size
    if not size:
        return []
    lo = _generic_address(fl, fl.variable_block)
    return [(lo, fl.b.add(lo, I64(size)))]


def _local_windows(fl: FunctionLowering) -> list[tuple[ll.Value, ll.Value]]:
    windows = []
    for var in fl.function.variables.values():
        if var.space == "local" and var.size:
            lo = _generic_address(fl, fl.stack_variable(var, 8))
            windows.append((lo, fl.b.add(lo, I64(var.size))))
    return windows


def _calls(function: ir.Function) -> bool:
    return any(inst.opcode == "call" for inst in function.instructions())


def _allocates(function: ir.Function) -> bool:
    return any(inst.opcode == "alloca" for inst in function.instructions())


def _node(fl: FunctionLowering, parent: ll.Value,
          windows: list[tuple[ll.Value, ll.Value]]) -> ll.Value:
    b = fl.b
    node = fl.entry_alloca(ll.ArrayType(I64, _NODE_WINDOWS + 2 * len(windows)), "check_node",
                           8)
    values = [parent, I64(len(windows)), I64(int(_allocates(fl.function)))] + \
        [v for window in windows for v in window]
    for i, value in enumerate(values):
        b.store(value, b.gep(node, [I64(8 * i)], source_etype=I8))
    return node


def _generic_address(fl: FunctionLowering, pointer: ll.Value) -> ll.Value:
    return fl.b.ptrtoint(fl.b.addrspacecast(pointer, ll.PointerType(addrspace=GENERIC)), I64)


def _word(b: ll.IRBuilder, buffer: ll.Value, index: ll.Value) -> ll.Value:
    return b.load(b.gep(buffer, [index], source_etype=I64), typ=I64)


# --- checked instructions ------------------------------------------------------------------------

_Access = tuple[ir.Address, "str | None", int, bool]


def checked(lower: Callable) -> Callable:
    """`lower` (an instruction's lowering) preceded by the checks of its memory accesses:
    where one fails, the fault is recorded and the instruction skipped (its destination
    registers get 0)."""
    def lower_checked(fl: FunctionLowering, inst: ir.Instruction) -> None:
        accesses = [a for a in _accesses(inst) if not _statically_inside(*a[:3])]
        if not accesses:
            lower(fl, inst)
            return
        b = fl.b
        skip = fl.llfn.append_basic_block("access_skipped")
        for address, space, size, write in accesses:
            value = _address_value(fl, address, space)
            ok = _inside(fl, value, space, size)
            if not write and inst.opcode == "cp":
                ok = _or_reads_nothing(fl, inst, ok)
            bad = fl.llfn.append_basic_block("access_fault")
            good = fl.llfn.append_basic_block("access_ok")
            b.cbranch(ok, good, bad)
            b.position_at_end(bad)
            _record(fl, inst, value, space, size, write)
            b.branch(skip)
            b.position_at_end(good)
        lower(fl, inst)
        join = fl.llfn.append_basic_block("access_done")
        if not b.block.is_terminated:
            b.branch(join)
        b.position_at_end(skip)
        _zero_destinations(fl, inst)
        b.branch(join)
        b.position_at_end(join)

    return lower_checked


def _accesses(inst: ir.Instruction) -> list[_Access]:
    """The memory an instruction touches: (operand, state space, bytes, whether written)."""
    op, operands = inst.opcode, inst.operands
    if op in ("ld", "ldu", "st"):
        size = instruction_type(inst).size * vector_count(inst)
        at = operands[0] if op == "st" else operands[1]
        return [(at, state_space(inst), size, op == "st")]
    if op in ("atom", "red"):
        size = TYPES[inst.spec.types[-1]].size * vector_count(inst)
        return [(operands[1] if op == "atom" else operands[0], state_space(inst), size, True)]
    if op == "cp" and inst.spec.get("kind") == ("async",):
        spaces = inst.spec.get("space") or ("shared", "global")
        size = operands[2].value
        return [(operands[0], "shared", size, True),
                (operands[1], spaces[1] if len(spaces) > 1 else "global", size, False)]
    if op == "mbarrier":
        return [(o, state_space(inst), 8, True) for o in operands if isinstance(o, ir.Address)]
    return []


def _or_reads_nothing(fl: FunctionLowering, inst: ir.Instruction, ok: ll.Value) -> ll.Value:
    """`ok`, or: this cp.async reads no source bytes (a src-size of 0, or ignore-src set),
    where its source address is only a placeholder (Triton's masked-off lanes)."""
    extra = list(inst.operands[3:])
    if inst.spec.get("l2hint") and extra:
        extra.pop()
    if not extra:
        return ok
    operand, b = extra[0], fl.b
    if isinstance(operand, ir.NotValue) or getattr(operand, "type", None) is TYPES["pred"]:
        return b.or_(ok, fl.read(operand, "pred"))
    return b.or_(ok, b.icmp_unsigned("==", fl.read(operand, "u32"), I32(0)))


def _statically_inside(address, space: str | None, size: int) -> bool:
    """Whether the access needs no check: .param and .local ones are not checked, and one
    at a constant offset inside a variable of known size is always good."""
    if space in ("param", "local") or not isinstance(address, ir.Address):
        return True
    var = address.base
    return isinstance(var, ir.Variable) and var.size > 0 and not var.unsized and \
        0 <= address.offset and address.offset + size <= var.size


def _address_value(fl: FunctionLowering, address: ir.Address, space: str | None) -> ll.Value:
    """The address an access uses, as an i64: the offset into shared memory for the shared
    space, else the generic address."""
    base = address.base
    if isinstance(base, ir.Variable):
        if space == "shared":
            value = I64(fl.target.shared_offsets.get(base.name, 0))
        else:
            value = _generic_address(fl, fl.target.variable_pointer(fl, base))
    elif base is None:
        value = I64(0)
    else:
        value = fl.read(base, "u64" if base.type.bits == 64 else "u32")
        if value.type.width == 32:
            value = fl.b.zext(value, I64)
    return fl.b.add(value, const_int(I64, address.offset)) if address.offset else value


def _inside(fl: FunctionLowering, address: ll.Value, space: str | None,
            size: int) -> ll.Value:
    """i1: whether [address, address + size) is memory the access may touch."""
    b = fl.b
    end = b.add(address, I64(size))
    if space == "shared":
        limit = b.zext(fl.shared_bytes, I64) if fl.shared_bytes is not None else I64(0)
        return b.and_(b.icmp_unsigned("<=", end, limit), b.icmp_unsigned(">=", end, address))
    hit = ll.Constant(ll.IntType(1), 0)
    for lo, hi in fl.slot_ranges + fl.block_window + (fl.windows if space is None else []):
        hit = b.or_(hit, b.and_(b.icmp_unsigned(">=", address, lo),
                                b.icmp_unsigned("<=", end, hi)))
    hit = b.and_(hit, b.icmp_unsigned(">=", end, address))
    before = b.block
    search = fl.llfn.append_basic_block("access_search")
    searched = fl.llfn.append_basic_block("access_searched")
    b.cbranch(hit, searched, search)
    b.position_at_end(search)
    found = b.call(search_function(fl.llfn.module), [b.ptrtoint(fl.checks, I64),
                                          b.ptrtoint(fl.check_node, I64), address, I64(size)],
                   cconv="spir_func")
    b.branch(searched)
    b.position_at_end(searched)
    ok = b.phi(ll.IntType(1))
    ok.add_incoming(ll.Constant(ll.IntType(1), 1), before)
    ok.add_incoming(found, search)
    return ok


def _record(fl: FunctionLowering, inst: ir.Instruction, address: ll.Value, space: str | None,
            size: int, write: bool) -> None:
    location = fl.module.location(inst.pos)
    line = location.line if location else 0
    info = (line << _LINE_SHIFT) | (int(space == "shared") << _SHARED_BIT) | \
        (min(size, (1 << _SIZE_BITS) - 1) << 1) | int(write)
    _store_fault(fl, fl.b, fl.checks, address, I64(info))


def record_assert(fl: FunctionLowering, inst: ir.Instruction, number: int,
                  assert_line: ll.Value) -> None:
    """Record the failed assert `number` of the kernel (the call of __assertfail `inst`,
    given `assert_line`, an i32) unless the launch has a fault recorded already, and say
    that an assert failed (CHECKS_ASSERTED), whichever fault was recorded."""
    b = fl.b
    location = fl.module.location(inst.pos)
    info = (location.line if location else 0) << _LINE_SHIFT | 1 << _ASSERT_BIT
    address = b.or_(b.shl(b.zext(assert_line, I64), I64(32)), I64(number))
    _store_fault(fl, b, fl.checks, address, I64(info))
    # (an atomic store: llvmlite's store_atomic wants typed pointers)
    b.atomic_rmw("xchg", b.gep(fl.checks, [I64(CHECKS_ASSERTED)], source_etype=I64), I64(1),
                 "monotonic")
    _log_assert(fl, b, b.or_(b.shl(b.zext(assert_line, I64), I64(32)), I64(number)))


def record_trap(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """Record that the work-item executed `trap` (the instruction `inst`) unless the launch
    has a fault recorded already, and say that the kernel stops (CHECKS_ASSERTED, which the
    callers of functions that may stop read, spirv_assert.stop_if_asserted)."""
    b = fl.b
    location = fl.module.location(inst.pos)
    info = (location.line if location else 0) << _LINE_SHIFT | 1 << _ASSERT_BIT
    _store_fault(fl, b, fl.checks, I64(TRAP), I64(info))
    b.atomic_rmw("xchg", b.gep(fl.checks, [I64(CHECKS_ASSERTED)], source_etype=I64), I64(1),
                 "monotonic")


def _log_assert(fl: FunctionLowering, b: ll.IRBuilder, what: ll.Value) -> None:
    """Add the failed assert (`what`: its number and line) and the work-item's ids to the
    launch's assert log, where it has room (the runtime prints the log on stderr)."""
    log = _word(b, fl.checks, I64(CHECKS_LOG))
    has_log = b.function.append_basic_block("assert_has_log")
    room = b.function.append_basic_block("assert_log")
    done = b.function.append_basic_block("assert_logged")
    b.cbranch(b.icmp_unsigned("!=", log, I64(0)), has_log, done)
    b.position_at_end(has_log)
    index = b.atomic_rmw("add", b.gep(fl.checks, [log], source_etype=I64), I64(1), "monotonic")
    capacity = _word(b, fl.checks, b.add(log, I64(1)))
    b.cbranch(b.icmp_unsigned("<", index, capacity), room, done)
    b.position_at_end(room)
    entry = b.add(b.add(log, I64(2)), b.mul(index, I64(LOG_ENTRY)))
    values = [what] + [b.call(fl.target.builtin(builtin, I64, [I32]), [I32(axis)],
                              cconv="spir_func")
                       for builtin in ("_Z12get_group_idj", "_Z12get_local_idj")
                       for axis in range(3)]
    for i, value in enumerate(values):
        b.store(value, b.gep(fl.checks, [b.add(entry, I64(i))], source_etype=I64))
    b.branch(done)
    b.position_at_end(done)


def _zero_destinations(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """What a skipped access would have loaded reads as 0."""
    if inst.opcode not in ("ld", "ldu", "atom", "mbarrier"):
        return
    dest = inst.operands[0]
    for register in dest.elements if isinstance(dest, ir.VectorValue) else (dest,):
        if isinstance(register, ir.RegisterElement):
            own = register.register.type
            fl.write(register, ll.Constant(value_type(own), None), own)
        elif isinstance(register, ir.Register):
            fl.b.store(ll.Constant(fl.storage_type(register), None), fl.register_slot(register))


# --- the module's check functions ---------------------------------------------------------------

def search_function(llmod: ll.Module) -> ll.Function:
    """i1 search(checks, node, address, size): whether [address, address + size) lies in a
    window of the node or its callers', or an allocation of the table. Made before the
    module's kernels (build_llvm): LLVM 22's SPIR-V backend puts the initializers of constants
    a kernel uses (printf's formats) into the function defined after it as well, and its
    module analysis then fails on them where that function does not use them."""
    existing = llmod.globals.get("ptxport.check_search")
    if existing is not None:
        return existing
    fn = ll.Function(llmod, ll.FunctionType(ll.IntType(1), [I64, I64, I64, I64]),
                     "ptxport.check_search")
    fn.calling_convention, fn.linkage = "spir_func", "internal"
    fn.attributes.add("noinline")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    checks, node = b.inttoptr(fn.args[0], _GLOBAL_PTR), b.inttoptr(fn.args[1], _PRIVATE_PTR)
    address, size = fn.args[2:]
    end = b.add(address, size)
    yes = fn.append_basic_block("inside")
    ll.IRBuilder(yes).ret(ll.Constant(ll.IntType(1), 1))
    windows = fn.append_basic_block("windows")
    b.cbranch(b.icmp_unsigned("<", end, address), fn.append_basic_block("wraps"), windows)
    ll.IRBuilder(fn.blocks[-1]).ret(ll.Constant(ll.IntType(1), 0))
    b.position_at_end(windows)
    unknown = _search_windows(fn, b, node, address, end, yes)
    _search_table(fn, b, checks, address, end, yes)
    b.ret(unknown)
    return fn


def _search_windows(fn: ll.Function, b: ll.IRBuilder, node: ll.Value, address: ll.Value,
                    end: ll.Value, yes: ll.Block) -> ll.Value:
    """Walk the nodes (branching to `yes` on a hit); gives whether one had unknown windows."""
    start = b.block
    walk, scan, step, done = (fn.append_basic_block(n) for n in
                              ("walk", "scan", "next_node", "walked"))
    b.cbranch(b.icmp_unsigned("==", node, ll.Constant(_PRIVATE_PTR, None)), done, walk)
    b.position_at_end(walk)
    current = b.phi(_PRIVATE_PTR)
    unknown = b.phi(ll.IntType(1))
    current.add_incoming(node, start)
    unknown.add_incoming(ll.Constant(ll.IntType(1), 0), start)
    count = b.load(b.gep(current, [I64(8)], source_etype=I8), typ=I64)
    is_unknown = b.icmp_unsigned("!=", b.load(b.gep(current, [I64(16)], source_etype=I8),
                                              typ=I64), I64(0))
    b.branch(scan)
    b.position_at_end(scan)
    i = b.phi(I64)
    i.add_incoming(I64(0), walk)
    more = fn.append_basic_block("window")
    b.cbranch(b.icmp_signed("<", i, count), more, step)
    b.position_at_end(more)
    at = b.add(b.mul(i, I64(2)), I64(_NODE_WINDOWS))
    lo = b.load(b.gep(current, [at], source_etype=I64), typ=I64)
    hi = b.load(b.gep(current, [b.add(at, I64(1))], source_etype=I64), typ=I64)
    i.add_incoming(b.add(i, I64(1)), more)
    b.cbranch(b.and_(b.icmp_unsigned(">=", address, lo), b.icmp_unsigned("<=", end, hi)),
              yes, scan)
    b.position_at_end(step)
    parent = b.load(current, typ=_PRIVATE_PTR)
    seen = b.or_(unknown, is_unknown)
    current.add_incoming(parent, step)
    unknown.add_incoming(seen, step)
    b.cbranch(b.icmp_unsigned("==", parent, ll.Constant(_PRIVATE_PTR, None)), done, walk)
    b.position_at_end(done)
    found = b.phi(ll.IntType(1))
    found.add_incoming(ll.Constant(ll.IntType(1), 0), start)
    found.add_incoming(seen, step)
    return found


def _search_table(fn: ll.Function, b: ll.IRBuilder, checks: ll.Value, address: ll.Value,
                  end: ll.Value, yes: ll.Block) -> None:
    """Binary search of the launch's allocation table (pairs sorted by start)."""
    count = _word(b, checks, I64(CHECKS_TABLE))
    lo = search_allocations(fn, b, checks, CHECKS_HEADER, count, address,
                            ("table_head", "table_body", "table_done"))
    candidate, after = fn.append_basic_block("table_candidate"), fn.append_basic_block("table")
    b.cbranch(b.icmp_unsigned(">", lo, I64(0)), candidate, after)
    b.position_at_end(candidate)
    limit = _word(b, checks, b.add(b.mul(lo, I64(2)), I64(CHECKS_HEADER - 1)))
    b.cbranch(b.icmp_unsigned("<=", end, limit), yes, after)
    b.position_at_end(after)


def _store_fault(fl: FunctionLowering, b: ll.IRBuilder, checks: ll.Value, address: ll.Value,
                 info: ll.Value) -> None:
    """Record a bad access unless one is recorded already: its address, info, work-group
    and work-item. Inline, not a call: a call on the path of every access (taken or not)
    kept Intel's OpenCL CPU compiler from vectorizing kernels well."""
    first = b.extract_value(b.cmpxchg(checks, I64(0), info, "monotonic", "monotonic"), 1)
    record = b.function.append_basic_block("fault_record")
    done = b.function.append_basic_block("fault_recorded")
    b.cbranch(first, record, done)
    b.position_at_end(record)
    b.store(address, b.gep(checks, [I64(CHECKS_ADDRESS)], source_etype=I64))
    for field, builtin in ((CHECKS_GROUP, "_Z12get_group_idj"),
                           (CHECKS_LOCAL, "_Z12get_local_idj")):
        callee = fl.target.builtin(builtin, I64, [I32])
        for axis in range(3):
            value = b.call(callee, [I32(axis)], cconv="spir_func")
            b.store(value, b.gep(checks, [I64(field + axis)], source_etype=I64))
    b.branch(done)
    b.position_at_end(done)
