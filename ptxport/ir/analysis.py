"""Facts about IR functions that several tools need (inspect, the runtime's argument checks)."""

from __future__ import annotations

import struct
from collections.abc import Iterable

from ptxport.ir import nodes as ir

__all__ = ["address_taken", "calls_of", "finite_registers", "live_after",
           "nan_blind_registers", "pointer_parameters", "predecessors", "recursive_call",
           "runs_to_completion", "state_space", "uses_and_defs"]


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


def _registers_in(value, out: set) -> None:
    """Every register a value reads (addresses, vectors, pairs, negations...)."""
    if isinstance(value, ir.Register):
        out.add(value)
    elif isinstance(value, ir.RegisterElement):
        out.add(value.register)
    elif isinstance(value, ir.Address):
        if isinstance(value.base, ir.Register):
            out.add(value.base)
    elif isinstance(value, ir.VectorValue | ir.ListValue):
        for element in value.elements:
            _registers_in(element, out)
    elif isinstance(value, ir.PairValue):
        _registers_in(value.first, out)
        _registers_in(value.second, out)
    elif isinstance(value, ir.NotValue | ir.NegValue):
        _registers_in(value.value, out)


def _defs(value, out: set) -> None:
    """Registers a destination operand overwrites entirely (a field write does not)."""
    if isinstance(value, ir.Register):
        out.add(value)
    elif isinstance(value, ir.VectorValue):
        for element in value.elements:
            _defs(element, out)
    elif isinstance(value, ir.PairValue):
        _defs(value.first, out)
        _defs(value.second, out)


def uses_and_defs(inst: ir.Instruction) -> tuple[set, set]:
    """(registers read, registers certainly written) by one instruction. A guarded
    instruction may not run, so it writes nothing certainly."""
    from ptxport.ir.verify import writes_destination

    uses: set = set()
    defs: set = set()
    operands = inst.operands
    if writes_destination(inst):
        _defs(operands[0], defs)
        if isinstance(operands[0], ir.RegisterElement):
            uses.add(operands[0].register)     # the other fields are kept
        if inst.opcode == "wgmma":             # d = a * b + d (scale-d) reads d too
            _registers_in(operands[0], uses)
        operands = operands[1:]
    for value in operands:
        _registers_in(value, uses)
    if inst.guard is not None:
        uses.add(inst.guard)
        defs = set()
    return uses, defs


def _live_out(function: ir.Function) -> dict[int, set]:
    """id(block) -> the registers live at its end, by the classic backward dataflow."""
    summary = {}
    for block in function.blocks:
        used, killed = set(), set()
        for inst in block.instructions:
            u, d = uses_and_defs(inst)
            used |= u - killed
            killed |= d
        summary[id(block)] = (used, killed)
    live_in = {id(b): set() for b in function.blocks}
    live_out = {id(b): set() for b in function.blocks}
    changed = True
    while changed:
        changed = False
        for block in reversed(function.blocks):
            out = set().union(*(live_in[id(s)] for s in block.successors)) \
                if block.successors else set()
            used, killed = summary[id(block)]
            new_in = used | (out - killed)
            if out != live_out[id(block)] or new_in != live_in[id(block)]:
                live_out[id(block)], live_in[id(block)] = out, new_in
                changed = True
    return live_out


def live_after(function: ir.Function, wanted: set[int]) -> dict[int, set]:
    """For each instruction whose id is in `wanted`: the registers live just after it (read
    later before being overwritten)."""
    live_out = _live_out(function)
    result = {}
    for block in function.blocks:
        live = set(live_out[id(block)])
        for inst in reversed(block.instructions):
            if id(inst) in wanted:
                result[id(inst)] = set(live)
            u, d = uses_and_defs(inst)
            live = (live - d) | u
    return result


def live_before(function: ir.Function, points: set[tuple[int, int]]) -> dict[tuple, set]:
    """For each (id(block), index) in `points`: the registers live just before the block's
    instruction `index` (index = the block's length: at its end)."""
    live_out = _live_out(function)
    result = {}
    for block in function.blocks:
        live = set(live_out[id(block)])
        count = len(block.instructions)
        if (id(block), count) in points:
            result[(id(block), count)] = set(live)
        for index in range(count - 1, -1, -1):
            u, d = uses_and_defs(block.instructions[index])
            live = (live - d) | u
            if (id(block), index) in points:
                result[(id(block), index)] = set(live)
    return result


def predecessors(function: ir.Function) -> dict[int, list]:
    """id(block) -> the function's blocks that may go to it, in the function's order."""
    found: dict[int, list] = {id(b): [] for b in function.blocks}
    for block in function.blocks:
        for successor in block.successors:
            if id(successor) in found:
                found[id(successor)].append(block)
    return found


def may_write(inst: ir.Instruction) -> set:
    """Every register `inst` may write, in part or conditionally (a superset: for
    instructions whose first operand is a destination only in some forms, it counts)."""
    from ptxport.ir.verify import _NO_DESTINATION

    out: set = set()
    if inst.operands and (inst.opcode not in _NO_DESTINATION
                          or inst.opcode in ("bar", "barrier")):
        _registers_in(inst.operands[0], out)
    return out


def constant_registers(kernel: ir.Function) -> dict:
    """Registers whose only write is an unguarded mov of an integer immediate -> its value
    (what NVRTC makes of a shuffle's offsets and member mask)."""
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(reg, []).append(inst)
    found = {}
    for reg, insts in writes.items():
        if len(insts) != 1:
            continue
        inst = insts[0]
        if inst.opcode == "mov" and inst.guard is None and len(inst.operands) == 2 \
                and inst.operands[0] is reg and isinstance(inst.operands[1], ir.IntImm):
            found[reg] = inst.operands[1].value
    return found


def modified_before(function: ir.Function, waits: set[int],
                    conditional: frozenset[int] = frozenset()) -> dict[int, set]:
    """For each instruction whose id is in `waits` (points where a thread saves its registers
    and later restores them): the registers that may have been written since the thread
    last passed a wait or since the function began. A register not in the set still holds,
    on every path, the value saved or restored at the previous wait, so it need not be saved
    again. Forward must-analysis over the CFG: a wait's own results count as written after
    it; every other register is as it was saved, unless the wait is guarded or its id is in
    `conditional` (a wait a thread may pass without saving anything, such as a test that
    succeeds at once)."""
    everything = frozenset(function.registers.values())
    entry = function.blocks[0] if function.blocks else None
    clean_in = {id(b): (frozenset() if b is entry else everything) for b in function.blocks}
    preds_of = predecessors(function)
    result: dict[int, set] = {}

    def through(block, clean, record: bool):
        for inst in block.instructions:
            d = may_write(inst)
            if id(inst) in waits:
                if record:
                    result[id(inst)] = set(everything - clean)
                # a guarded wait may be skipped: then nothing was saved
                saved = inst.guard is None and id(inst) not in conditional
                clean = (everything if saved else clean) - d
            else:
                clean = clean - d
        return clean

    changed = True
    clean_out = {id(b): everything for b in function.blocks}
    while changed:
        changed = False
        for block in function.blocks:
            preds = preds_of[id(block)]
            if block is not entry and preds:
                new_in = frozenset.intersection(*(clean_out[id(p)] for p in preds))
            else:
                new_in = clean_in[id(block)] if block is entry else frozenset()
            out = through(block, new_in, False)
            if new_in != clean_in[id(block)] or out != clean_out[id(block)]:
                clean_in[id(block)], clean_out[id(block)] = new_in, out
                changed = True
    for block in function.blocks:
        through(block, clean_in[id(block)], True)
    return result


def address_taken(module: ir.Module, functions: Iterable[ir.Function]) -> list[ir.Function]:
    """The functions among `functions` whose address a kernel may call through: named
    other than as a direct call's callee."""
    taken: dict[str, ir.Function] = {}
    for var in module.globals.values():
        for item in var.init or []:
            if isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Function):
                taken[item.target.name] = item.target
    for f in module.functions.values():
        for inst in f.instructions():
            operands = inst.operands[1:] if inst.opcode == "call" else inst.operands
            for value in operands:
                target = value.target if isinstance(value, ir.SymbolAddress) else value
                if isinstance(target, ir.Function):
                    taken[target.name] = target
    names = {f.name for f in functions}
    return [f for name, f in taken.items() if name in names and not f.is_kernel]


def calls_of(module: ir.Module, function: ir.Function,
             taken: list[ir.Function]) -> list[tuple[ir.Instruction, ir.Function]]:
    """The calls `function` makes, as (call instruction, callee) pairs: a direct call names
    its callee; a call through an address may reach each function of `taken` (those whose
    address is taken: address_taken) with as many parameters and results."""
    found = []
    for inst in function.instructions():
        if inst.opcode != "call":
            continue
        operands = list(inst.operands)
        returns = operands.pop(0).elements if isinstance(operands[0], ir.ListValue) else ()
        callee = operands.pop(0)
        if isinstance(callee, ir.Function):
            found.append((inst, callee))
            continue
        args = operands[0].elements if operands and isinstance(operands[0], ir.ListValue) \
            else ()
        found += [(inst, f) for f in taken
                  if len(f.params) == len(args) and len(f.returns) == len(returns)]
    return found


def recursive_call(module: ir.Module, roots: Iterable[ir.Function]
                   ) -> tuple[ir.Instruction, ir.Function, ir.Function] | None:
    """A call that closes a cycle among the functions `roots` may reach through calls (a
    function that calls itself, directly or through others), as (call instruction, the
    function making it, its callee); None when there is none."""
    defined = [f for f in module.functions.values() if not f.is_declaration]
    taken = address_taken(module, defined)
    on_path: set[str] = set()
    done: set[str] = set()

    def visit(f: ir.Function):
        on_path.add(f.name)
        for inst, callee in calls_of(module, f, taken):
            if callee.is_declaration or callee.name in done:
                continue
            if callee.name in on_path:
                return inst, f, callee
            found = visit(callee)
            if found is not None:
                return found
        on_path.discard(f.name)
        done.add(f.name)
        return None

    for root in roots:
        if root.name not in done and not root.is_declaration:
            found = visit(root)
            if found is not None:
                return found
    return None


def escaping_locals(function: ir.Function) -> list[ir.Variable]:
    """The .local variables of `function` used other than as the address of a .local
    access (ld.local [var+8]): their address may become a generic one."""
    escaping: set[str] = set()

    def visit(value, local_access: bool) -> None:
        if isinstance(value, ir.Variable):
            if not local_access:
                escaping.add(value.name)
        elif isinstance(value, ir.SymbolAddress):
            visit(value.target, False)
        elif isinstance(value, ir.Address):
            visit(value.base, local_access)
        elif isinstance(value, ir.VectorValue | ir.ListValue):
            for element in value.elements:
                visit(element, False)

    for inst in function.instructions():
        local_access = state_space(inst) == "local"
        for operand in inst.operands:
            visit(operand, local_access and isinstance(operand, ir.Address))
    return [v for v in function.variables.values()
            if v.space == "local" and v.name in escaping]


def state_space(inst: ir.Instruction) -> str | None:
    """The state space an ld/st/atom names (None: generic), with the cluster forms folded
    into their CTA space: one CTA per cluster on the CPU."""
    space = inst.spec.get("space")
    if isinstance(space, tuple):
        space = space[0]
    return {"shared::cta": "shared", "shared::cluster": "shared", "param::entry": "param",
            "param::func": "param"}.get(space, space)


# instructions a loop-free kernel may still wait at for something outside its grid, or for
# an unbounded time (calls may recurse or print; printf's output must appear at the sync)
_UNBOUNDED = frozenset({"call", "nanosleep", "brkpt", "pmevent"})


def runs_to_completion(function: ir.Function) -> bool:
    """Whether `function` (a kernel) ends by itself in a time bounded by its size: no
    backward branch (its control flow graph has no cycle), no call and nothing that waits
    for the host. A launch of such a kernel may run at once, on the launching thread: no
    host action it could wait for exists (runtime/launch.py)."""
    if function.is_declaration or not function.blocks:
        return False
    if any(inst.opcode in _UNBOUNDED for inst in function.instructions()):
        return False
    # a depth-first search for a back edge (iterative: kernels may have many blocks)
    state: dict[int, int] = {}          # id(block) -> 1 on the path, 2 done
    stack = [(function.blocks[0], iter(function.blocks[0].successors))]
    state[id(function.blocks[0])] = 1
    while stack:
        block, successors = stack[-1]
        following = next(successors, None)
        if following is None:
            state[id(block)] = 2
            stack.pop()
        elif state.get(id(following)) == 1:
            return False
        elif id(following) not in state:
            state[id(following)] = 1
            stack.append((following, iter(following.successors)))
    return True


# f32 instructions whose result (or predicate) is the same for every NaN an operand may hold:
# arithmetic that makes its own NaN result canonical (ex2 and div included; abs and neg, whose
# NaN result is the canonical NaN whatever the operand's payload), comparisons, and min/max
# (a NaN operand gives the other operand, two give the canonical NaN)
_NAN_BLIND_READERS = ("add", "sub", "mul", "fma", "mad", "setp", "min", "max", "div", "ex2",
                      "abs", "neg")
_WORDS = (("b32",), ("u32",), ("s32",), ("f32",))
# the pseudo-register of a function's shared memory, where its 32-bit words can be followed
# from the st.shared that writes them to the ld.shared that reads them (_shared_followed)
_SHARED = "shared memory"
# instructions that read shared memory through registers, not an address operand
_SHARED_BY_REGISTERS = ("wgmma", "tcgen05", "call")


def _shared_word(inst: ir.Instruction) -> bool:
    """A scalar 32-bit ld or st of shared memory (no vector, no third operand)."""
    return inst.opcode in ("ld", "st") and state_space(inst) == "shared" \
        and tuple(inst.spec.types) in _WORDS and not inst.spec.get("vec") \
        and len(inst.operands) == 2


def _shared_followed(f: ir.Function) -> bool:
    """Whether every read of `f`'s shared memory is a scalar 32-bit ld.shared: each memory
    operand belongs to an ld or st of a named state space other than generic (so no
    generic pointer, atom, cp or ldmatrix reaches shared memory), shared ones of single
    words, and nothing reads it through registers (wgmma's descriptors, a call's pointer)."""
    for inst in f.instructions():
        if inst.opcode in _SHARED_BY_REGISTERS:
            return False
        if not any(isinstance(v, ir.Address) for v in inst.operands):
            continue
        space = state_space(inst)
        if inst.opcode not in ("ld", "st") or space is None or space == "generic" \
                or (space == "shared" and not _shared_word(inst)):
            return False
    return True


def _bits_carried(inst: ir.Instruction, reg, shared: bool):
    """Where `inst` copies `reg`'s 32 bits unchanged: the destination register of a mov or of
    a shuffle's value, or _SHARED for the value of an st.shared where `shared` (shared
    memory followed); False where such an instruction also reads `reg` otherwise (a lane,
    a mask, an address, a guard); None where `inst` copies nothing."""
    store = inst.opcode == "st" and shared and _shared_word(inst)
    if inst.opcode not in ("mov", "shfl") and not store:
        return None
    if inst.guard is reg or tuple(inst.spec.types) not in _WORDS:
        return False
    if store:
        value = inst.operands[1]
        return _SHARED if value is reg and reg not in _registers(inst.operands[0]) else False
    dest = inst.operands[0]
    if inst.opcode == "shfl" and isinstance(dest, ir.PairValue):
        dest = dest.first       # (its predicate says whether the source lane was in range)
    if not isinstance(dest, ir.Register) or dest.vector is not None \
            or inst.operands[1] is not reg \
            or any(reg in _registers(v) for v in inst.operands[2:]):
        return False
    return dest


def _blind_registers(f: ir.Function, use) -> set:
    """The 32-bit registers of `f` every read of which `use(inst, reg, shared)` finds blind
    (True), or a copy into a register (or shared memory) itself blind: the greatest such
    set. `use` answers True, False, or where the read carries the register's bits."""
    shared = _shared_followed(f)
    uses: dict = {_SHARED: [] if shared else [False]}
    feeds: dict = {}        # destination -> the registers carried into it
    for inst in f.instructions():
        if shared and inst.opcode == "ld" and _shared_word(inst) \
                and isinstance(inst.operands[0], ir.Register):
            uses[_SHARED].append(inst.operands[0])
            feeds.setdefault(inst.operands[0], []).append(_SHARED)
        for reg in uses_and_defs(inst)[0]:
            how = use(inst, reg, shared)
            uses.setdefault(reg, []).append(how)
            if how is not True and how is not False:
                feeds.setdefault(how, []).append(reg)
    blind = {reg for reg, how in uses.items() if all(how) and (
        reg is _SHARED or reg.vector is None and reg.type.name in ("f32", "b32"))}
    # a register stays only while every destination it reaches does (a worklist: each
    # register leaves once, then its sources are looked at again)
    work = [how for hows in uses.values() for how in hows
            if how is not True and how is not False and how not in blind]
    while work:
        for source in feeds.get(work.pop(), ()):
            if source in blind:
                blind.discard(source)
                work.append(source)
    blind.discard(_SHARED)
    return blind


def _nan_use(inst: ir.Instruction, reg, shared: bool):
    carried = _bits_carried(inst, reg, shared)
    if carried is not None:
        return carried
    # (cvt.f32.f32 in every form gives the canonical NaN, or +0 with .sat, for any NaN)
    return (inst.opcode in _NAN_BLIND_READERS and tuple(inst.spec.types) == ("f32",)) \
        or (inst.opcode == "cvt" and tuple(inst.spec.types) == ("f32", "f32"))


def nan_blind_registers(f: ir.Function) -> set:
    """The 32-bit registers (.f32, or .b32 as Triton declares its registers) of `f` read only
    as operands of f32 add, sub, mul, fma, mad, div, ex2, abs, neg, min, max, setp and
    cvt.f32.f32 (and at least once), or moved, shuffled or stored to shared memory and
    loaded back into such registers: no instruction can tell which NaN such a register
    holds, so an f32 NaN written to it need not be made the canonical NaN (an accumulator
    within an unrolled dot product, a softmax's differences and exponentials, its warps'
    partial maxima and sums through shuffles and shared memory, the sums in nvcc's expf; a
    last write, which a global store reads, stays canonical)."""
    return _blind_registers(f, _nan_use)


# f32 arithmetic whose result is bounded by its operands' bounds (and by 1 with .sat)
_BOUNDED = ("add", "sub", "mul", "fma", "mad")
_F32_LIMIT = 2.0 ** 126       # bounds stay below this: rounding cannot reach infinity


def _float_value(value) -> float | None:
    """An f32 instruction's immediate operand as a float, or None (not an immediate)."""
    if not isinstance(value, ir.FloatImm):
        return None
    fmt = "<f" if value.width == 32 else "<d"
    return struct.unpack(fmt, value.bits.to_bytes(value.width // 8, "little"))[0]


def _write_bound(inst: ir.Instruction, bounds: dict) -> float | None:
    """The largest magnitude `inst` writes, given the registers' `bounds`, or None (not
    provably finite)."""
    types = tuple(inst.spec.types)
    if inst.opcode == "cvt":
        return 1.0 if types == ("f32", "f32") and inst.spec.get("sat") else None
    if not ((inst.opcode in _BOUNDED and types == ("f32",))
            or (inst.opcode == "mov" and types in (("f32",), ("b32",)))):
        return None
    if inst.opcode != "mov" and inst.spec.get("sat"):
        return 1.0
    sizes = []
    for value in inst.operands[1:]:
        size = bounds.get(value) if isinstance(value, ir.Register) else _float_value(value)
        if size is None or not abs(size) < _F32_LIMIT:      # (NaN fails too)
            return None
        sizes.append(abs(size))
    if inst.opcode == "mov":
        return sizes[0] if len(sizes) == 1 else None
    if inst.opcode in ("add", "sub"):
        size = sizes[0] + sizes[1]
    elif inst.opcode == "mul":
        size = sizes[0] * sizes[1]
    else:
        size = sizes[0] * sizes[1] + sizes[2]
    # (rounding, in any mode, moves a result by less than this)
    size *= 1 + 2.0 ** -20
    return size if size < _F32_LIMIT else None


def finite_registers(f: ir.Function) -> set:
    """The f32 (and .b32) registers of `f` that hold finite values only, by bounds proved
    from every write: cvt.sat.f32.f32 and any .sat arithmetic (at most 1), movs of finite
    immediates and of such registers, and f32 add, sub, mul, fma and mad of such registers
    and immediates whose bounds stay far inside the f32 range (nvcc's expf: the clamped,
    scaled x that fma.rm rounds down, and its sums). An f32 result written to one is never
    a NaN: it needs no canonical NaN. A register written from itself (an accumulator) is
    never proved."""
    writes: dict = {}
    for inst in f.instructions():
        for reg in may_write(inst):
            writes.setdefault(reg, []).append(inst)
    pending = {reg for reg in writes
               if reg.vector is None and reg.type.name in ("f32", "b32")}
    bounds: dict = {}
    proved = True
    while proved:
        proved = False
        for reg in sorted(pending, key=lambda r: r.name):
            sizes = [_write_bound(inst, bounds) for inst in writes[reg]]
            if sizes and None not in sizes:
                bounds[reg] = max(sizes)
                pending.discard(reg)
                proved = True
    return set(bounds)


# f32 instructions whose result is the same for +0 and -0 in an operand (2**0 = 1; compares
# take the two as equal), and those where the sign of a zero operand changes at most the sign
# of a zero result, at the operand positions (1-based, after the destination) where it does:
# x + 0 is x, 0 * y and 0 / y are zeros or NaN, min and max pick between equal operands
_ZERO_SIGN_READERS = ("ex2", "setp")
_ZERO_SIGN_CARRIERS = {"add": (1, 2), "sub": (1, 2), "mul": (1, 2), "fma": (1, 2, 3),
                       "mad": (1, 2, 3), "min": (1, 2, 3), "max": (1, 2, 3), "div": (1,)}


def _zero_sign_use(inst: ir.Instruction, reg, shared: bool):
    """How `inst` reads `reg`: True where the zero's sign cannot matter, the destination
    register (or _SHARED) where it reaches at most the sign of that register's zero, False
    otherwise."""
    if inst.opcode == "cvt":        # .sat gives +0 for -0 (nvcc's expf clamps with it)
        return tuple(inst.spec.types) == ("f32", "f32") and bool(inst.spec.get("sat")) \
            and inst.guard is not reg
    carried = _bits_carried(inst, reg, shared)
    if carried is not None:
        return carried
    if tuple(inst.spec.types) != ("f32",) or inst.guard is reg or inst.spec.get("xorsign"):
        return False
    if inst.opcode in _ZERO_SIGN_READERS:
        return True
    positions = _ZERO_SIGN_CARRIERS.get(inst.opcode, ())
    dest = inst.operands[0]
    if not positions or not isinstance(dest, ir.Register) or dest.vector is not None:
        return False
    others = [v for i, v in enumerate(inst.operands[1:], 1) if i not in positions]
    if any(reg in _registers(v) for v in others):
        return False
    return dest


def _registers(value) -> set:
    out: set = set()
    _registers_in(value, out)
    return out


def zero_sign_blind_registers(f: ir.Function) -> set:
    """The 32-bit registers of `f` whose zeros' sign no instruction can observe: read only by
    f32 ex2, setp and cvt.sat.f32.f32, or by f32 add, sub, mul, fma, mad, min, max, a
    division's dividend, a mov, a shuffle's value or a store to shared memory whose
    destination (each ld.shared's register) is itself such a register (a softmax's row
    maximum: x - max, times log2(e), into ex2; with several warps a row, through their slots
    in shared memory). An f32 max or min written to one need not order -0 below +0."""
    return _blind_registers(f, _zero_sign_use)
