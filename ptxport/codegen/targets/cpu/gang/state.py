"""The warp-gang lowering's state for one kernel: GangLowering, the shared FunctionLowering
made to work on a warp's lanes (the execution mask, guards, registers as vectors or uniform
scalars, the address patterns known in the current segment), and the target hooks that
differ per lane. lowering.py makes one and passes it the instruction lowerings of control.py,
warp.py and memory.py, which take it as their .
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    LOWERINGS,
    FunctionLowering,
    value_type,
)
from ptxport.codegen.targets.cpu.abi import CTX
from ptxport.codegen.targets.cpu.gang import params
from ptxport.codegen.targets.cpu.gang.lanes import (
    BLOCK_COPY,
    GangBuilder,
    GangUnsupported,
    W,
    declare,
    is_vec,
    vec,
)
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.codegen.targets.cpu.target import CpuTarget
from ptxport.errors import PtxportError
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import constant_registers as _constant_registers
from ptxport.ir.analysis import uses_and_defs
from ptxport.ir.types import TYPES, Type
from ptxport.passes.lane_forms import HALF
from ptxport.passes.lane_offsets import aligned_offsets
from ptxport.passes.shared_bounds import shared_bounds
from ptxport.passes.uniformity import (
    thread_x_copies,
    uniform_registers,
    warp_index_of,
)
from ptxport.ptx.ast import IntImm, Sink

# --- the target: special registers and windows ------------------------------------------------

def gang_target_class():
    class GangTarget(CpuTarget):
        """CpuTarget's answers, per lane where they differ by lane."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # the context fields the gang function reads: (offset, type name) -> type
            self.block_fields: dict = {}
            # and the kernel's parameters it reads through the copy (params.py), likewise
            self.block_params: dict = {}

        def special_register(self, fl, reg):
            name = reg.name
            axis = "xyzw".find(reg.component) if reg.component else 0
            b = fl.b
            if name == "%tid":
                if axis >= 3:
                    return I32(0)
                return fl.thread_index(axis)
            if name == "%ntid":
                return I32(fl.block[axis] if axis < 3 else 0)
            if name == "%nwarpid":
                return I32((fl.block[0] * fl.block[1] * fl.block[2] + W - 1) // W)
            if name == "%laneid":
                return fl.lane
            if name == "%warpid":
                return fl.warp_number
            if name.startswith("%lanemask_"):
                one = b.shl(b.splat(I32(1)), fl.lane)
                below = b.sub(one, b.splat(I32(1)))
                kind = name[len("%lanemask_"):]
                return {"eq": lambda: one, "lt": lambda: below,
                        "le": lambda: b.or_(below, one),
                        "gt": lambda: b.not_(b.or_(below, one)),
                        "ge": lambda: b.not_(below)}[kind]()
            return super().special_register(fl, reg)

        def ctx_field(self, fl, name, index=0, typ=I32):
            """A field of the block context, read from run_blocks' copy of the fields the
            gang function reads (rounds.py: made as each block starts): the kernel's stores
            may alias the context itself, so LLVM loaded each field again in every warp's
            call (4 loads and 2 spills a call of scan_blelloch's 352 a block); the copy,
            on run_blocks' stack and never escaping, it reads once a block."""
            offset = CTX.fields[name] + 4 * index
            self.block_fields[(offset, str(typ))] = typ
            cache = self._entry_loads.setdefault(fl.llfn, {})
            value = cache.get((offset, str(typ)))
            if value is None:
                with fl.b.goto_entry_block():
                    fl.b.position_at_start(fl.entry)
                    p = ll.IRBuilder.gep(fl.b, fl.llfn.args[BLOCK_COPY], [I64(offset)],
                                         source_etype=I8)
                    value = cache[(offset, str(typ))] = ll.IRBuilder.load(fl.b, p, typ=typ)
            return value

        def space_base(self, fl, space):
            if space == "local":
                raise GangUnsupported("local memory")
            return super().space_base(fl, space)

        def exit(self, fl):
            raise GangUnsupported("exit through the shared lowering")

        def trap(self, fl, inst):
            raise GangUnsupported("trap")

        def synchronize(self, fl, inst):
            raise GangUnsupported("a wait through the shared lowering")

    return GangTarget


# --- lowering ---------------------------------------------------------------------------------

class GangLowering(FunctionLowering):
    """FunctionLowering with every register a vector of the warp's lanes."""

    def __init__(self, module, function, llfn, target, plan, block, options: CpuOptions,
                 lowerings: dict, group_accesses):
        super().__init__(module, function, llfn, target)
        self.options = options
        # opcode -> the gang's own lowering (lowering.py's table; else the shared one), and
        # places.py's grouping of a segment's accesses by base register
        self.lowerings, self.group_accesses = lowerings, group_accesses
        self.b = GangBuilder(self.entry)
        self.plan = plan
        self.mask = None
        self.guard = None
        # a predicate every lane of the mask holds (lowering._lower_whole_run): an
        # instruction guarded by it is lowered as unguarded
        self.guard_held = None
        self.unguarded_mask = None      # the mask before the current instruction's guard
        self.block = block      # the block shape the code is for
        self.thread_x = thread_x_copies(function)
        self.uniform = uniform_registers(function, block, self.thread_x)
        self.uniform_ids = {id(r) for r in self.uniform}     # (place keys name bases by id)
        # registers whose lanes lie constant offsets apart (passes/lane_offsets.py), and
        # their alignments (0: none known)
        aligned = aligned_offsets(function, block, self.uniform)
        self.lane_offsets = {r: c for r, (c, _) in aligned.items()}
        self.lane_alignment = {r: a for r, (_, a) in aligned.items()}
        # within a segment: predicates a setp wrote from a register's aligned lanes and a
        # uniform value -> (all lanes true, no lane true) as scalars, and the mask then
        # (warp_bounds.py); a write of the predicate forgets it
        self.warp_bounds: dict = {}
        # within a segment: strided shared loads that a later one may take again, and the
        # notes a store holds while it is lowered (reloads.py)
        self.reloads: dict = {}
        self.reloads_held: dict | None = None
        # shared-memory accesses inside one variable for this shape (passes/shared_bounds.py)
        self.shared_bounds = shared_bounds(function, block)
        # saved registers whose frame holds u of u + c[i] alone: id -> (u's slot, c)
        # (and those kept as the 32-bit u they widen: id -> (the scale's shift, signed))
        self.rebuilt, self.rebuilt_wide = {}, {}
        # params.py: id(parameter) -> offset; id(register reading the copy) -> (offset, type)
        self.param_offsets = params.direct_params(function)
        self.param_registers = params.param_registers(self, function)
        self._init_access_state()
        # ids of the shared accesses checked before their loop (passes/hoist_checks.py)
        self.prechecked: frozenset = frozenset()
        # passes/hoist_global_checks.py's GlobalChecks (lowering.py), and memory.py's way
        # for lanes that passed a loop's test (True) or did not (False), else None
        self.range_tests, self.loop_checked, self.range_kept = {}, {}, set()
        # passes/block_checks.py's block tests (id(marker) -> what block_tests.py lowers)
        # and the ids of the accesses they cover
        self.block_tests: dict = {}
        self.block_checked: set = set()
        self.verdict_reset = False      # (whether run_blocks zeroes the block's verdict)
        self.call_test = False          # (... and the call's, and writes its box)
        self.loop_check_state: bool | None = None
        self.constants = _constant_registers(function)
        # whether accesses from a base register stream (streams.py), and its table of writes
        self.streams: dict = {}
        # registers that are another plus a constant (coalesce.py, at its first segment)
        self.offset_bases: dict | None = None
        # wgmma's accumulators in stack memory, by their count (wgmma.py)
        self.wgmma_slots: dict = {}
        # id(register) -> (writes, reads) in the kernel (chains.py, found on first use)
        self.chain_counts: dict | None = None
        self.read_somewhere = set().union(
            *(uses_and_defs(inst)[0] for inst in function.instructions()))

    def _init_access_state(self) -> None:
        """The memory accesses' notes: places, classes, mma buffers, group checks, windows."""
        # within a segment: the lanes' addresses read from a base, and how they lie
        # (_place, _classify); a write of the base register forgets them
        self.places: dict = {}
        self.patterns: dict = {}
        # id(slot) -> the key in places of what write last stored in a register's slot
        # (written's direct look-up; the entry itself lives and is forgotten in places)
        self.value_keys: dict = {}
        # the stores of classify.check_widening's flag (and of its start), removed when no
        # access read the flag (lower_gang): saxpy's loop kept a load, an and and a store
        self.exact_stores, self.exact_read = [], False
        # wraps.py's answers by (place key, halves); the kernel's writes of each register
        self.wrap_jumps, self.kernel_writers = {}, None
        # within a segment: the stack buffers of the mma operands laid out (mma.py), by
        # their fragment's registers (a write of one of those forgets its buffer), and how
        # many it made; the buffers, by (the segment's n-th, size), made once
        self.mma_operands: dict = {}
        self.mma_made = 0
        self.mma_buffers: dict = {}
        # within a segment: which unguarded accesses share a base (until it is written) and
        # size, and the span of their offsets (places.py's access_groups); each group's accesses are
        # checked together once (group_check)
        self.group_of, self.group_span, self.group_ok = {}, {}, {}
        # in the whole kernel: the offsets of the strided global spans prefetched, by (place
        # key, stride) (strided.py: a pair's second access fetches the first's lines again)
        self.span_prefetches: dict = {}
        # within a segment: whether passes/shared_bounds.py proves every access of a group
        # inside its shared variable (windows.py's _proven), by group
        self.proven_groups: dict = {}
        # window loads (windows.py) whose range tests are pending until the next flush, and
        # the groups with a guarded access (whose range test may fail where no access faults)
        self.window_checks: list = []
        self.guarded_groups: set = set()

    # registers and values

    def storage_type(self, reg: ir.Register) -> ll.Type:
        if reg in self.uniform:     # one value for the whole warp (passes/uniformity.py)
            return super().storage_type(reg)
        element = vec(value_type(reg.type))
        return ll.ArrayType(element, reg.vector) if reg.vector else element

    def carry_flag(self):
        raise GangUnsupported("the carry flag")

    def unsupported(self, inst, reason):
        return GangUnsupported(f"{inst.spec.text}: {reason}")

    def read(self, value, t):
        """A vector of the lanes' values, or one scalar where every lane has the same (a
        uniform register, a constant, a parameter...): GangBuilder splats it where it meets
        a vector."""
        t = TYPES[t] if isinstance(t, str) else t
        if isinstance(value, ir.Register) and id(value) in self.rebuilt:
            return self.read_rebuilt(value, t)
        return super().read(value, t)

    def no_widening_wrapped(self) -> ll.Value:
        """i1: no widening of the warp has wrapped (classify.check_widening's flag in the
        warp frame), for an access that trusts a widened form only then. Marks the flag
        read: lower_gang drops the flag's stores where no access read it, so every reader
        comes here (strided's span check once read it directly and found it never set)."""
        self.exact_read = True
        flag = ll.IRBuilder.load(self.b, self.frame_field(self.exact_offset), typ=I32)
        return ll.IRBuilder.icmp_unsigned(self.b, "!=", flag, I32(0))

    def read_rebuilt(self, reg: ir.Register, t: Type):
        """A register the warp's frame keeps as u (lowering.py's rebuilt registers): its
        lanes, u + c[i], or u[i // 16] + c[i] (each half's u, the second one past the
        first), as a shuffle of the two splats that scalar_lanes.lane sees through."""
        base, offsets, halves = self.rebuilt[id(reg)]
        b = self.b
        u = b.splat(b.load(base))
        if halves:
            second = b.splat(b.load(_second_half(b, base)))
            u = ll.IRBuilder.shuffle_vector(b, u, second, ll.Constant(
                ll.VectorType(I32, W), [i // HALF * W for i in range(W)]))
        lanes = b.add(u, offsets)
        if id(reg) in self.rebuilt_wide:        # (widened as the kernel's widening does)
            shift, signed = self.rebuilt_wide[id(reg)]
            lanes = b.shl((b.sext if signed else b.zext)(lanes, vec(I64)), b.splat(I64(shift)))
        return self.convert(lanes, reg.type, t)

    def read_lanes(self, value, t):
        """read, as a vector of the lanes' values."""
        return self.b.splat(self.read(value, t))

    def as_int(self, v):
        if not is_vec(v):
            return super().as_int(v)
        element = v.type.element
        if isinstance(element, ll.IntType):
            return v
        width = {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(element)]
        return self.b.bitcast(v, vec(ll.IntType(width)))

    def _resize(self, v, have: Type, want: Type, signed_from: Type):
        target = vec(value_type(want))
        if v.type == target:
            return v
        bits = self.as_int(v)
        width = want.bits
        if bits.type.element.width > width:
            bits = self.b.trunc(bits, vec(ll.IntType(width)))
        elif bits.type.element.width < width:
            extend = self.b.sext if signed_from.kind == "signed" else self.b.zext
            bits = extend(bits, vec(ll.IntType(width)))
        return bits if bits.type == target else self.b.bitcast(bits, target)

    def convert(self, v, have, want):
        if not is_vec(v):
            return super().convert(v, have, want)
        return self._resize(v, have, want, have)

    def convert_out(self, v, have, register):
        if not is_vec(v):
            v = self.b.splat(v)
        return self._resize(v, have, register, have)

    def forget_segment(self, instructions=()):
        self.places.clear()
        self.warp_bounds.clear()
        self.reloads.clear()
        self.patterns.clear()
        self.mma_operands.clear()
        self.mma_made = 0
        self.group_ok.clear()
        self.proven_groups.clear()
        self.group_of, self.group_span = self.group_accesses(self, instructions)
        self.guarded_groups = {self.group_of[id(i)] for i in instructions
                               if i.guard is not None and id(i) in self.group_of}

    def constant_of(self, operand) -> int | None:
        """The value of an immediate operand, or of a register whose one definition in the
        kernel is an unguarded mov of an immediate (what NVRTC makes of shuffle offsets);
        None otherwise. (Reading that register before its mov reads an undefined value.)"""
        if isinstance(operand, IntImm):
            return operand.value
        if isinstance(operand, ir.Register):
            return self.constants.get(operand)
        return None

    def forget(self, reg: ir.Register) -> None:
        """Forget the addresses and classifications read from `reg` (it was written), and
        what is known of its lanes as a whole."""
        self.warp_bounds.pop(id(reg), None)
        for key in [k for k in self.reloads if k[0][0] == id(reg)]:
            del self.reloads[key]
        for key in [k for k in self.places if k[0] == id(reg)]:
            del self.places[key]
        for key in [k for k in self.patterns if k[0][0] == id(reg)]:
            del self.patterns[key]
        for key in [k for k in self.mma_operands if id(reg) in k[3]]:
            del self.mma_operands[key]

    def written(self, slot, load):
        """The value `load` of a register's `slot` read: the one the segment last wrote
        there (write), where that write came before the load and has not been forgotten
        since (a later write, a guarded run, a segment's start), else None."""
        record = self.places.get(self.value_keys.get(id(slot)))
        if record is None:
            return None
        value, store = record
        return value if store.serial < getattr(load, "serial", -1) else None

    def write(self, dest, v, t, merged: bool = False):
        """Write `v` (of type t) to `dest` for the mask's lanes; `merged`: v holds dest's
        values in the lanes outside the mask already (a plain register), written as it is."""
        t = TYPES[t] if isinstance(t, str) else t
        if isinstance(dest, Sink):
            return
        self.forget(dest.register if isinstance(dest, ir.RegisterElement) else dest)
        if isinstance(dest, ir.Register) and dest in self.uniform:
            if is_vec(v) and warp_index_of(self.inst, self.block, self.thread_x):
                # threadIdx.x / 32 in 32-wide rows: computed per lane, alike in all (every
                # lane's threadIdx.x is computed, active or not)
                v = ll.IRBuilder.extract_element(self.b, v, I32(0))
            if is_vec(v) or (self.guard is not None and is_vec(self.guard)):
                raise GangUnsupported(
                    f"{self.inst.spec.text}: a per-lane value for the uniform register "
                    f"{dest.name} (a gap in passes/uniformity.py's analysis)")
            value = FunctionLowering.convert_out(self, v, t, dest.type)
            slot = self.register_slot(dest)
            if self.guard is not None:
                value = self.b.select(self.guard, value, self.b.load(slot))
            self.b.store(value, slot)
            return
        if isinstance(dest, ir.Register) and id(dest) in self.rebuilt:
            value = self.convert_out(v, t, dest.type)
            if id(dest) in self.rebuilt_wide:       # (the 32-bit lanes it widened)
                shift, signed = self.rebuilt_wide[id(dest)]
                value = (self.b.ashr if signed else self.b.lshr)(value, self.b.splat(I64(shift)))
                value = self.b.trunc(value, vec(I32))
            self._note_base(value, *self.rebuilt[id(dest)])
            return
        if isinstance(dest, ir.Register) and not dest.vector:
            value = self.convert_out(v, t, dest.type)
            slot = self.register_slot(dest)
            if not merged and self.keeps_old(dest):
                value = self.b.select(self.mask, value, self.b.load(slot))
            store = self.b.store(value, slot)
            # (what the slot holds while the segment does not write dest again: forget)
            key = (id(dest), "value", id(slot))
            self.places[key] = (value, store)
            self.value_keys[id(slot)] = key
            return
        if isinstance(dest, ir.RegisterElement):
            reg = dest.register
            index = "xyzw".find(dest.component)
            if not reg.vector or index < 0:
                raise GangUnsupported(f"the selector .{dest.component}")
            slot = self.register_slot(reg)
            array = self.b.load(slot)
            value = self.convert_out(v, t, reg.type)
            if self.keeps_old(reg):
                value = self.b.select(self.mask, value, self.b.extract_value(array, index))
            self.b.store(self.b.insert_value(array, value, index), slot)
            return
        raise GangUnsupported(f"a result into {dest!r}")

    def _note_base(self, value, base, offsets, halves=False) -> None:
        """A register that the warp's frame keeps as u (lowering.py's rebuilt registers) is
        written: u is any written lane's value less its offset (the mask's lanes are all the
        live ones, so no lane keeps an old value; a write by none keeps the old u); per
        half warp, each half's u from a lane of that half."""
        if not halves:
            self._note_half(value, base, offsets, 0, W)
            return
        self._note_half(value, base, offsets, 0, HALF)
        self._note_half(value, _second_half(self.b, base), offsets, HALF, HALF)

    def _note_half(self, value, base, offsets, first: int, count: int) -> None:
        """_note_base for the `count` lanes from `first`: u from the first of them in the
        mask."""
        b = self.b
        if isinstance(self.mask, ll.Constant):
            lane, bits = I32(first), None
        else:
            bits = self.bits(self.mask)
            if count < W:
                bits = b.and_(b.lshr(bits, I32(first)), I32((1 << count) - 1))
            lane = b.add(b.and_(self.cttz(bits), I32(count - 1)), I32(first))
        u = b.sub(ll.IRBuilder.extract_element(b, value, lane),
                  ll.IRBuilder.extract_element(b, offsets, lane))
        if bits is not None:
            u = b.select(ll.IRBuilder.icmp_unsigned(b, "==", bits, I32(0)), b.load(base), u)
        b.store(u, base)

    def keeps_old(self, reg: ir.Register) -> bool:
        """Whether a write of `reg` must keep the old value in the lanes outside the mask:
        when the instruction is guarded (the mask's other lanes go on reading it), or when
        `reg` is live where a segment starts (lanes elsewhere may read it when they come).
        Else every lane that reads `reg` later reads this write's value or a later one."""
        guarded = self.inst.guard is not None and not self.guard_holds(self.inst)
        return guarded or reg in self.crossing

    def guard_holds(self, inst: ir.Instruction) -> bool:
        """Whether `inst` is guarded by the predicate every lane of the mask holds
        (guard_held), so that it is lowered as unguarded."""
        return inst.guard is not None and inst.guard is self.guard_held \
            and not inst.guard_negated

    def write_vector(self, dest, values, t):
        if isinstance(dest, ir.Register) and dest.vector == len(values):
            for i, v in enumerate(values):
                self.write(ir.RegisterElement(dest, "xyzw"[i]), v, t)
            return
        super().write_vector(dest, values, t)

    # lane masks as integers

    def bits(self, mask) -> ll.Value:
        return ll.IRBuilder.bitcast(self.b, mask, I32)

    def lanes(self, bits) -> ll.Value:
        return ll.IRBuilder.bitcast(self.b, bits, vec(I1))

    def cttz(self, v):
        fn = declare(self.llfn.module, "llvm.cttz.i32", I32, [I32, I1])
        return ll.IRBuilder.call(self.b, fn, [v, I1(0)])

    def ctlz(self, v):
        fn = declare(self.llfn.module, "llvm.ctlz.i32", I32, [I32, I1])
        return ll.IRBuilder.call(self.b, fn, [v, I1(0)])

    def reduce(self, op: str, v):
        element = v.type.element
        fn = declare(self.llfn.module, f"llvm.vector.reduce.{op}.v{W}i{element.width}",
                      element, [v.type])
        return ll.IRBuilder.call(self.b, fn, [v])

    # instructions

    def lowering_for(self, inst):
        if id(inst) in self.range_tests:     # (not an opcode: lowering.py's own key)
            return self.lowerings["range-test"]
        if id(inst) in self.range_kept:
            return self.lowerings["range-kept"]
        own = self.lowerings.get(inst.opcode)
        return own or LOWERINGS.get(inst.opcode)

    def _lower_instruction(self, inst):
        try:
            self._lower_on_lanes(inst)
        except (PtxportError, GangUnsupported):
            raise
        except Exception as e:   # a bug of ours: said as one, with the instruction at fault
            raise self.internal_error(inst, e, "as warp gangs") from e

    def _lower_on_lanes(self, inst):
        self.inst = inst
        self.guard = None
        lower = self.lowering_for(inst)
        if lower is None:
            raise GangUnsupported(f"{inst.spec.text}: no lowering")
        if inst.guard is None or inst.opcode == "bra" or self.guard_holds(inst):
            self.unguarded_mask = self.mask
            lower(self, inst)
            return
        guard = self.guard_value(inst)
        outer = self.unguarded_mask = self.mask
        self.mask = self.b.and_(outer, guard)
        self.guard = guard
        lower(self, inst)
        self.guard = None
        if inst.opcode in ("ret", "exit"):      # the lanes that did not exit go on
            outer = self.b.and_(outer, self.b.not_(guard))
            self.b.store(outer, self.mask_slot)
        self.mask = outer


def _second_half(b: ll.IRBuilder, base):
    """Where a rebuilt register per half warp keeps the second half's u: past the first."""
    pointer = ll.IRBuilder.gep(b, base, [I32(1)], source_etype=base.type.pointee)
    pointer.type = base.type
    return pointer
