"""CUDA's thread model on AMD GPUs: special registers, barriers and 32-lane warp operations
for the AMDGPU target (amdgpu.py builds the modules; this file says what %laneid, shfl, vote,
match, redux, activemask and bar become).

A CUDA warp is 32 lanes on every chip. On wave32 chips (RDNA: gfx10, gfx11, gfx12) the warp is
the wave. On wave64 chips (CDNA: gfx90a, gfx942) each CUDA warp is one half of a wave: lanes
0-31 and 32-63 are two warps, so every warp-level result is taken over the thread's half:
    %laneid  = wave lane & 31
    ballot   = (wave ballot >> (wave lane & 32)) & 0xffffffff      (activemask likewise)
    shfl     = ds_bpermute from wave lane (wave lane & 32) | source lane
match and redux read each lane of the warp with ds_bpermute in a loop of 32 that every lane
of the warp runs the same number of times.

Block and grid sizes come from the HSA dispatch packet (code object v4 has no implicit
block-size arguments): workgroup_size_{x,y,z} at byte 4, grid_size_{x,y,z} (in work-items) at
byte 12, group_segment_size (static + dynamic LDS) at byte 24.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I16, I32, I64, FunctionLowering, counter_word, declare
from ptxport.codegen.ops.data import instruction_type
from ptxport.codegen.ops.sync import lower_shuffle, write_match
from ptxport.ir import nodes as ir
from ptxport.ir.special_registers import ZERO_WITHOUT_DRIVER

__all__ = ["WarpModel"]

_CONSTANT = 4  # the address space of the dispatch packet
_AXES = {"x": 0, "y": 1, "z": 2}


class WarpModel:
    """Special registers and warp operations for one chip's wave size (32 or 64)."""

    def __init__(self, llmod: ll.Module, wave: int, target_name: str):
        self.llmod, self.wave, self.target_name = llmod, wave, target_name

    def call(self, fl: FunctionLowering, name: str, ret: ll.Type, args: list) -> ll.Value:
        return fl.b.call(declare(self.llmod, name, ret, [a.type for a in args]), args)

    # --- lanes --------------------------------------------------------------------------------

    def wave_lane(self, fl: FunctionLowering) -> ll.Value:
        """The thread's lane in its wave (0-31 or 0-63)."""
        lane = self.call(fl, "llvm.amdgcn.mbcnt.lo", I32, [I32(-1), I32(0)])
        if self.wave == 64:
            lane = self.call(fl, "llvm.amdgcn.mbcnt.hi", I32, [I32(-1), lane])
        return lane

    def half(self, fl: FunctionLowering) -> ll.Value | None:
        """The first wave lane of the thread's CUDA warp (0 or 32); None on wave32."""
        if self.wave == 32:
            return None
        return fl.b.and_(self.wave_lane(fl), I32(32))

    def laneid(self, fl: FunctionLowering) -> ll.Value:
        lane = self.wave_lane(fl)
        return lane if self.wave == 32 else fl.b.and_(lane, I32(31))

    def ballot(self, fl: FunctionLowering, predicate: ll.Value) -> ll.Value:
        """The 32-bit ballot of the thread's CUDA warp: bit i is lane i's predicate (inactive
        lanes give 0)."""
        if self.wave == 32:
            return self.call(fl, "llvm.amdgcn.ballot.i32", I32, [predicate])
        wave = self.call(fl, "llvm.amdgcn.ballot.i64", I64, [predicate])
        shifted = fl.b.lshr(wave, fl.b.zext(self.half(fl), I64))
        return fl.b.trunc(shifted, I32)

    def activemask(self, fl: FunctionLowering) -> ll.Value:
        return self.ballot(fl, I1(1))

    def read_lane(self, fl: FunctionLowering, value: ll.Value, lane: ll.Value) -> ll.Value:
        """`value` (i32 or i64) as lane `lane` (0-31) of the thread's warp holds it."""
        half = self.half(fl)
        source = lane if half is None else fl.b.or_(half, lane)
        address = fl.b.shl(source, I32(2))
        if value.type == I64:
            low = self.read_lane(fl, fl.b.trunc(value, I32), lane)
            high = self.read_lane(fl, fl.b.trunc(fl.b.lshr(value, I64(32)), I32), lane)
            return fl.b.or_(fl.b.zext(low, I64), fl.b.shl(fl.b.zext(high, I64), I64(32)))
        return self.call(fl, "llvm.amdgcn.ds.bpermute", I32, [address, value])

    # --- special registers --------------------------------------------------------------------

    def dispatch_field(self, fl: FunctionLowering, offset: int, typ: ll.Type) -> ll.Value:
        packet = fl.b.call(declare(self.llmod, "llvm.amdgcn.dispatch.ptr",
                                   ll.PointerType(addrspace=_CONSTANT), []), [])
        at = fl.b.gep(packet, [I64(offset)], source_etype=ll.IntType(8))
        value = fl.b.load(at, typ=typ, align=typ.width // 8)
        value.set_metadata("invariant.load", self.llmod.add_metadata([]))
        return value

    def block_size(self, fl: FunctionLowering, axis: int) -> ll.Value:
        return fl.b.zext(self.dispatch_field(fl, 4 + 2 * axis, I16), I32)

    def special_register(self, fl: FunctionLowering, reg: ir.SpecialRegister) -> ll.Value:
        name, axis = reg.name, _AXES.get(reg.component or "x", 3)
        b = fl.b
        if name in ("%tid", "%ntid", "%ctaid", "%nctaid") and axis == 3:
            return I32(0)
        if name == "%tid":
            return self.call(fl, f"llvm.amdgcn.workitem.id.{'xyz'[axis]}", I32, [])
        if name == "%ctaid":
            return self.call(fl, f"llvm.amdgcn.workgroup.id.{'xyz'[axis]}", I32, [])
        if name == "%ntid":
            return self.block_size(fl, axis)
        if name == "%nctaid":
            grid = self.dispatch_field(fl, 12 + 4 * axis, I32)
            size = self.block_size(fl, axis)
            return b.udiv(b.add(grid, b.sub(size, I32(1))), size)
        if name == "%laneid":
            return self.laneid(fl)
        if name == "%warpid":
            return b.lshr(self._linear_tid(fl), I32(5))
        if name == "%nwarpid":
            return b.lshr(b.add(self._block_threads(fl), I32(31)), I32(5))
        if name.startswith("%lanemask_"):
            return self._lanemask(fl, name[len("%lanemask_"):])
        if name in ("%clock", "%clock_hi", "%clock64"):
            return counter_word(b, self.call(fl, "llvm.readcyclecounter", I64, []), name)
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            # The GPU's constant 100 MHz counter, in nanoseconds.
            ticks = self.call(fl, "llvm.readsteadycounter", I64, [])
            return counter_word(b, b.mul(ticks, I64(10)), name)
        if name in ("%total_smem_size", "%aggr_smem_size"):
            return self.dispatch_field(fl, 24, I32)
        if name == "%dynamic_smem_size":
            static = self.call(fl, "llvm.amdgcn.groupstaticsize", I32, [])
            return b.sub(self.dispatch_field(fl, 24, I32), static)
        if name in ZERO_WITHOUT_DRIVER:
            return ll.Constant(ll.IntType(reg.type.bits), 0)
        raise fl.unsupported(fl.inst, f"the special register {name} has no AMDGPU equivalent")

    def _block_threads(self, fl: FunctionLowering) -> ll.Value:
        b = fl.b
        return b.mul(b.mul(self.block_size(fl, 0), self.block_size(fl, 1)),
                     self.block_size(fl, 2))

    def _linear_tid(self, fl: FunctionLowering) -> ll.Value:
        b = fl.b
        tid = [self.call(fl, f"llvm.amdgcn.workitem.id.{a}", I32, []) for a in "xyz"]
        row = b.add(b.mul(tid[2], self.block_size(fl, 1)), tid[1])
        return b.add(b.mul(row, self.block_size(fl, 0)), tid[0])

    def _lanemask(self, fl: FunctionLowering, kind: str) -> ll.Value:
        b = fl.b
        one = b.shl(I32(1), self.laneid(fl))
        below = b.sub(one, I32(1))
        masks = {"eq": lambda: one, "lt": lambda: below, "le": lambda: b.or_(below, one),
                 "gt": lambda: b.not_(b.or_(below, one)), "ge": lambda: b.not_(below)}
        if kind not in masks:
            raise fl.unsupported(fl.inst, f"%lanemask_{kind}")
        return masks[kind]()

    # --- barriers -----------------------------------------------------------------------------

    def barrier(self, fl: FunctionLowering) -> None:
        """__syncthreads: the work-group's accesses before it are seen by all after it."""
        fl.b.fence("release", "workgroup")
        self.call(fl, "llvm.amdgcn.s.barrier", ll.VoidType(), [])
        fl.b.fence("acquire", "workgroup")

    def bar(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """bar{.cta}.sync a / barrier{.cta}.sync{.aligned} a: AMD GPUs have one work-group
        barrier, which every barrier id shares (a CTA whose threads all wait at the same
        barriers in the same order behaves the same); bar.warp.sync waits for the wave."""
        if inst.spec.has("warp"):
            fl.b.fence("acq_rel", "wavefront")
            self.call(fl, "llvm.amdgcn.wave.barrier", ll.VoidType(), [])
            return
        if inst.spec.get("scope") == "cluster" or inst.spec.get("op") not in ("sync", "red",
                                                                               None):
            raise fl.unsupported(inst, "AMD GPUs have no arrive or cluster barriers")
        if inst.spec.get("op") == "red":
            self.bar_red(fl, inst)
            return
        if len(inst.operands) > 1:
            raise fl.unsupported(inst, "a barrier for part of the CTA (a thread count): AMD "
                                       "GPUs have one barrier for the whole work-group")
        self.barrier(fl)

    def bar_red(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """bar.red.{popc.u32,and.pred,or.pred} d, a, {!}c: a work-group barrier that counts
        the threads whose c is true in an LDS word (thread 0 clears it before, and a third
        barrier keeps the next bar.red from clearing it while it is read)."""
        b = fl.b
        dest, *ids, predicate = inst.operands
        if len(ids) > 1:
            raise fl.unsupported(inst, "a barrier for part of the CTA (a thread count): AMD "
                                       "GPUs have one barrier for the whole work-group")
        counter = self._reduction_word()
        first = b.icmp_unsigned("==", self._linear_tid(fl), I32(0))
        with b.if_then(first):
            b.store(I32(0), counter, align=4)
        self.barrier(fl)
        b.atomic_rmw("add", counter, b.zext(fl.read(predicate, "pred"), I32), "monotonic")
        self.barrier(fl)
        count = b.load(counter, typ=I32, align=4)
        self.barrier(fl)
        redop = inst.spec.get("redop")
        if redop == "popc":
            fl.write(dest, count, "u32")
        elif redop == "and":
            fl.write(dest, b.icmp_unsigned("==", count, self._block_threads(fl)), "pred")
        else:
            fl.write(dest, b.icmp_unsigned("!=", count, I32(0)), "pred")

    def _reduction_word(self) -> ll.Value:
        name = "ptxport.bar_red"
        word = self.llmod.globals.get(name)
        if word is None:
            word = ll.GlobalVariable(self.llmod, I32, name=name, addrspace=3)
            word.linkage = "internal"
            word.initializer = ll.Constant(I32, ll.Undefined)
            word.align = 4
            word.type = ll.PointerType(addrspace=3)
        return word

    # --- warp operations ----------------------------------------------------------------------

    def member_mask(self, fl: FunctionLowering, inst: ir.Instruction, operand) -> ll.Value:
        """A .sync operation's member mask; the forms without .sync take the active lanes."""
        if operand is not None and inst.spec.has("sync"):
            return fl.read(operand, "b32")
        return self.activemask(fl)

    def shfl(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """shfl{.sync}.mode.b32 d{|p}, a, b, c{, m} with PTX's clamp and segment mask:
        maxLane = (lane & segmask) | (c & ~segmask), minLane = lane & segmask."""
        lower_shuffle(fl, inst, self.laneid(fl),
                      lambda value, source: self.read_lane(fl, value, source))

    def vote(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """vote{.sync}.{all,any,uni}.pred d, {!}a{, m}; vote{.sync}.ballot.b32 d, {!}a{, m}:
        over the active lanes of the member mask."""
        b = fl.b
        mode = inst.spec.get("mode")
        dest, a = inst.operands[:2]
        mask = self.member_mask(fl, inst, inst.operands[2] if len(inst.operands) > 2 else None)
        ballot = b.and_(self.ballot(fl, fl.read(a, "pred")), mask)
        if mode == "ballot":
            fl.write(dest, ballot, "b32")
            return
        members = b.and_(self.activemask(fl), mask)
        any_ = b.icmp_unsigned("!=", ballot, I32(0))
        all_ = b.icmp_unsigned("==", ballot, members)
        result = {"any": any_, "all": all_, "uni": b.or_(all_, b.not_(any_))}[mode]
        fl.write(dest, result, "pred")

    def activemask_op(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        fl.write(inst.operands[0], self.activemask(fl), "b32")

    def elect(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """elect.sync d|p, m: the lowest active lane of the member mask is elected."""
        b = fl.b
        dest, m = inst.operands
        members = b.and_(fl.read(m, "b32"), self.activemask(fl))
        first = self.call(fl, "llvm.cttz.i32", I32, [members, I1(0)])
        chosen = b.icmp_unsigned("==", first, self.laneid(fl))
        lane, pred = (dest.first, dest.second) if isinstance(dest, ir.PairValue) else (dest, None)
        fl.write(lane, first, "b32")
        if pred is not None:
            fl.write(pred, chosen, "pred")

    def _over_lanes(self, fl: FunctionLowering, value: ll.Value, members: ll.Value,
                    start: ll.Value, combine) -> ll.Value:
        """Fold `combine(acc, lane_value, is_member)` over lanes 0-31 of the warp: a loop that
        every lane runs 32 times, reading lane i's `value` with ds_bpermute."""
        b = fl.b
        before = b.block
        loop = fl.llfn.append_basic_block("lanes")
        done = fl.llfn.append_basic_block("lanes.done")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I32, "lane")
        acc = b.phi(start.type, "acc")
        i.add_incoming(I32(0), before)
        acc.add_incoming(start, before)
        other = self.read_lane(fl, value, i)
        member = b.trunc(b.lshr(members, i), I1)
        result = combine(acc, other, member, i)
        following = b.add(i, I32(1))
        i.add_incoming(following, b.block)
        acc.add_incoming(result, b.block)
        b.cbranch(b.icmp_unsigned("<", following, I32(32)), loop, done)
        b.position_at_end(done)
        return result

    def match(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """match.any.sync.b{32,64} d, a, m: the member lanes holding the same value;
        match.all.sync.b{32,64} d{|p}, a, m: the member mask if all hold the same, else 0."""
        b = fl.b
        t = instruction_type(inst)
        _, a, m = inst.operands
        value = fl.read(a, f"b{t.bits}")
        members = b.and_(fl.read(m, "b32"), self.activemask(fl))

        def same(acc, other, member, i):
            equal = b.and_(member, b.icmp_unsigned("==", other, value))
            return b.or_(acc, b.shl(b.zext(equal, I32), i))

        write_match(fl, inst, self._over_lanes(fl, value, members, I32(0), same), members)

    def redux(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """redux.sync.op.{b32,u32,s32} d, a, m over the member lanes."""
        b = fl.b
        op = inst.spec.get("op")
        t = instruction_type(inst)
        if t.is_float or t.bits != 32:
            raise fl.unsupported(inst, "redux.sync of floating-point values")
        dest, a, m = inst.operands
        value = fl.read(a, "b32")
        members = fl.read(m, "b32")
        signed = t.kind == "signed"
        starts = {"add": 0, "and": -1, "or": 0, "xor": 0,
                  "min": 0x7FFFFFFF if signed else -1, "max": -0x80000000 if signed else 0}
        compare = b.icmp_signed if signed else b.icmp_unsigned

        def step(acc, other, member, i):
            if op == "add":
                combined = b.add(acc, other)
            elif op in ("and", "or", "xor"):
                combined = getattr(b, op + "_" if op in ("and", "or") else op)(acc, other)
            else:
                keep = compare("<" if op == "min" else ">", acc, other)
                combined = b.select(keep, acc, other)
            return b.select(member, combined, acc)

        fl.write(dest, self._over_lanes(fl, value, members, I32(starts[op]), step), t)

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        lower = {"bar": self.bar, "barrier": self.bar, "shfl": self.shfl, "vote": self.vote,
                 "match": self.match, "redux": self.redux, "activemask": self.activemask_op,
                 "elect": self.elect}[inst.opcode]
        lower(fl, inst)
