"""What a kernel writes to global memory, as a function of the block index: the facts a
device group (runtime/group.py) splits a launch and merges its members' writes by.

Two layers. `kernel_writes(module, kernel)` is computed once per kernel, with no launch in
view: which pointer parameters each global store, load and atomic derives its address from
(pointer provenance through mov/add/cvta/cvt/...), which atomics there are (operation, type,
whether their old value is used), and whether blocks may talk to each other during the
launch (fences at GPU scope, volatile or acquire/release accesses, atomics whose returned
value is used, grid-wide barriers), in which case the kernel is never split.

`store_offsets(...)` then evaluates each global store's address, at a launch, as an affine
function of %ctaid and %tid: block and grid sizes and scalar arguments are known there, so
`out[blockIdx.y * width + i]` is affine. A store whose address is affine is bounded per box
of blocks (`StoreForm.hull`), which lets the group prove members' writes disjoint and merge
them by ranges; anything else is merged with per-byte write masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import uses_and_defs
from ptxport.passes.inline import functions_that, inline_calls

__all__ = ["ATOMIC_MERGES", "Atomic", "KernelWrites", "StoreForm", "field_token", "is_field",
           "kernel_writes", "load_offsets", "store_offsets"]

UNKNOWN = "?"          # provenance: an address that may come from anywhere (memory, ...)
HOSTMEM = "memory"     # provenance: a 64-bit value read from a buffer a pointer parameter
                       # passes (an address there is one the host wrote)
LOCAL = "local"        # provenance: shared, local or parameter memory (not global)
MODULE = "module"      # provenance: a module variable (.global/.const)

# (op, type kind) -> how partial results combine at the merge; other atomics are refused
ATOMIC_MERGES = {("add", "int"): "add", ("add", "float"): "add", ("min", "int"): "min",
                 ("max", "int"): "max", ("and", "bits"): "and", ("or", "bits"): "or",
                 ("xor", "bits"): "xor"}
# opcodes that write global memory in ways this analysis does not follow
_OPAQUE_WRITES = frozenset(("sust", "sured", "st.async", "cp.reduce.async.bulk", "multimem",
                            "red.async", "tensormap", "cp.async.bulk", "stmatrix"))
_GLOBALISH = (None, "global", "generic")
# opcodes besides ld that may read global memory (whatever their state-space modifiers say:
# cp.async names the shared destination's)
_OTHER_READS = frozenset(("cp", "ldu", "wmma", "tex", "tld4", "suld", "multimem"))
_MERGED_TYPES = frozenset(("u32", "s32", "b32", "u64", "s64", "b64", "f32", "f64"))
_WIDE_SCOPES = ("gpu", "sys", "gl", "cluster")


@dataclass(frozen=True)
class Atomic:
    param: str | None       # the pointer parameter its address derives from (None: unknown)
    op: str
    type: str               # PTX type: u32, s32, f32, b64, ...
    merge: str | None       # how partials combine (ATOMIC_MERGES), None when refused
    why: str = ""           # why it cannot be merged, in words


@dataclass
class KernelWrites:
    """The launch-independent facts; `refusal` says why the kernel must not be split."""

    kernel: str
    stores: list[tuple[ir.Instruction, frozenset]] = field(default_factory=list)
    loads: list[frozenset] = field(default_factory=list)
    load_insts: list[tuple[ir.Instruction, frozenset]] = field(default_factory=list)  # (ld, bases)
    # global memory read other than by ld (cp.async, ldu, wmma.load, textures): `loads` is
    # not every read
    other_reads: bool = False
    atomics: list[Atomic] = field(default_factory=list)
    refusal: str | None = None
    opaque_writes: bool = False       # writes the analysis cannot place: masks everywhere
    function: ir.Function | None = None
    # global accesses whose address derives from no pointer parameter (loaded from a buffer,
    # an integer): a group cannot give a member its own copy of that memory
    untranslated: list[ir.Instruction] = field(default_factory=list)
    # accesses whose address comes only from fields of structure arguments (field_token):
    # a launch that gives those fields group buffers translates them, others are refused
    field_accesses: list[tuple[ir.Instruction, frozenset]] = field(default_factory=list)
    fields: set = field(default_factory=set)     # every field token an address comes from

    def written_params(self) -> frozenset | None:
        """The pointer parameters stores may write through (None: any of them)."""
        if self.opaque_writes:
            return None
        found = set()
        for _, bases in self.stores:
            if bases & {UNKNOWN, HOSTMEM}:
                return None
            found |= {b for b in bases if b not in (LOCAL, MODULE)}
        return frozenset(found)


def _space(inst: ir.Instruction) -> str | None:
    space = inst.spec.get("space")
    return space.split("::")[0] if isinstance(space, str) else None


def _type_kind(name: str) -> str:
    return {"f": "float", "b": "bits"}.get(name[0], "int")


def _address_base(value) -> ir.Register | ir.Variable | None:
    return value.base if isinstance(value, ir.Address) else None


class _Provenance:
    """Which pointer parameters (or fields, or UNKNOWN/LOCAL/MODULE/HOSTMEM) each register may
    hold an address from, to a fixed point over every definition. The kernel's own local and
    shared memory is one cell: a value loaded from it may be anything stored into it."""

    def __init__(self, f: ir.Function, pointers: set[str]):
        self.f, self.pointers = f, pointers
        self.params = {p.name for p in f.params}
        self.bases: dict[int, frozenset] = {}
        self.in_local: frozenset = frozenset()
        changed = True
        while changed:
            changed = False
            for inst in f.instructions():
                ops = inst.operands
                if inst.opcode == "st" and len(ops) > 1 and self._local(inst):
                    new = self.in_local | self.of(ops[1])
                    changed |= new != self.in_local
                    self.in_local = new
                    continue
                if not ops or not isinstance(ops[0], ir.Register) or not _defines(inst):
                    continue
                new = self.bases.get(id(ops[0]), frozenset()) | self._of_definition(inst)
                if new != self.bases.get(id(ops[0]), frozenset()):
                    self.bases[id(ops[0])] = new
                    changed = True

    def _local(self, inst: ir.Instruction) -> bool:
        """Whether a store writes the kernel's own local or shared memory."""
        space = _space(inst)
        if space in ("local", "shared"):
            return True
        where = self.of(inst.operands[0])
        return space is None and bool(where) and where <= {LOCAL}

    def _of_load(self, inst: ir.Instruction) -> frozenset:
        """What a 64-bit value loaded from global, local or generic memory may address."""
        where = self.of(inst.operands[1])
        if where == {MODULE}:
            # an address kept in a module variable names module memory (initialisers such as
            # `int *p = &table[1]`), which each member holds a copy of, like the variable
            return frozenset((MODULE,))
        if where and where <= {LOCAL}:
            return self.in_local | {UNKNOWN}
        if where - {UNKNOWN, HOSTMEM, LOCAL, MODULE}:
            return frozenset((HOSTMEM,))
        return frozenset((UNKNOWN,))

    def _of_definition(self, inst: ir.Instruction) -> frozenset:
        ops = inst.operands
        if inst.opcode == "ld":
            if _space(inst) == "param":
                base = _address_base(ops[1])
                if isinstance(base, ir.Variable) and base.name in self.pointers:
                    return frozenset((base.name,))
                if not _wide(inst):
                    return frozenset()
                # a kernel parameter's field; else a call's result (malloc's: member memory)
                if isinstance(base, ir.Variable) and base.name in self.params:
                    return frozenset((field_token(base.name, ops[1].offset),))
                return frozenset((UNKNOWN,))
            return self._of_load(inst) if _wide(inst) else frozenset()
        if inst.opcode in ("atom", "shfl", "ldu", "prmt", "call"):
            return frozenset((UNKNOWN,)) if inst.opcode != "prmt" else frozenset()
        found = frozenset()
        for value in ops[1:]:
            found |= self.of(value)
        return found

    def of(self, value) -> frozenset:
        if isinstance(value, ir.Register):
            return self.bases.get(id(value), frozenset())
        if isinstance(value, ir.Variable | ir.SymbolAddress):
            target = value.target if isinstance(value, ir.SymbolAddress) else value
            if isinstance(target, ir.Variable) and target.space in ("global", "const"):
                return frozenset((MODULE,))
            return frozenset((LOCAL,))
        if isinstance(value, ir.Address):
            if value.base is None:
                return frozenset((UNKNOWN,))
            return self.of(value.base)
        if isinstance(value, ir.RegisterElement):
            return self.of(value.register)
        if isinstance(value, tuple | list):
            found = frozenset()
            for element in value:
                found |= self.of(element)
            return found
        return frozenset()


def _wide(inst: ir.Instruction) -> bool:
    """Whether a load's value may be an address (a 64-bit integer: f64 data is no address)."""
    return any(t in ("u64", "s64", "b64") for t in inst.spec.types)


def field_token(param: str, offset: int) -> str:
    """The provenance of the 64-bit field at byte `offset` of structure parameter `param`."""
    return f"{param}+{offset}"


def is_field(token) -> bool:
    return isinstance(token, str) and "+" in token   # (no PTX identifier has a '+')


def _untranslated(bases: frozenset, space: str | None) -> bool:
    """Whether an access at an address of provenance `bases` in state space `space` (global
    or generic) reaches memory through an address the host gave other than as a pointer
    parameter or a structure's field (in a buffer, as an integer). Addresses the kernel
    made itself (device malloc, its own local memory) are not: they name member memory."""
    if bases - {UNKNOWN, HOSTMEM}:
        return False     # based on a parameter, a field or the kernel's own memory (a value
                         # from memory is then an index into it)
    return HOSTMEM in bases or (space == "global" and not bases)


def _defines(inst: ir.Instruction) -> bool:
    from ptxport.ir.verify import writes_destination

    return writes_destination(inst)


def _talks_across_blocks(inst: ir.Instruction) -> str | None:
    """Why `inst` lets blocks of one launch communicate (None if it does not)."""
    spec, op = inst.spec, inst.opcode
    if op in ("membar", "fence") and spec.get("scope", "gl") in _WIDE_SCOPES:
        return f"'{spec.text}' orders memory between blocks"
    if op in ("ld", "st") and _space(inst) in _GLOBALISH:
        if spec.has("volatile") or spec.has("mmio"):
            return f"'{spec.text}' (volatile) may exchange values with other blocks"
        if spec.get("sem") in ("acquire", "release", "relaxed") and \
                spec.get("scope") in _WIDE_SCOPES:
            return f"'{spec.text}' synchronises with other blocks"
    if op in ("barrier", "bar") and spec.has("cluster"):
        return f"'{spec.text}' waits for other blocks"
    if op in ("griddepcontrol",):
        return f"'{spec.text}' orders this grid against another"
    return None


def _inlined(module: ir.Module, kernel: ir.Function) -> ir.Function:
    """The kernel with every call of a defined device function inlined (so that the stores
    of callees are seen); recursion raises UnsupportedFeatureError."""
    callers = functions_that(module, lambda f: True)
    return inline_calls(module, kernel, callers, "group",
                        "writes memory (its writes must be seen whole)").function


def kernel_writes(module: ir.Module, kernel_name: str, pointers: set[str]) -> KernelWrites:
    """The launch-independent write facts of kernel `kernel_name`; `pointers` names its
    parameters that hold addresses (runtime.program.Kernel.arguments_info)."""
    result = KernelWrites(kernel_name)
    try:
        f = _inlined(module, module.functions[kernel_name])
    except UnsupportedFeatureError as e:
        result.refusal = f"its device functions cannot be inlined ({e.reason})"
        result.opaque_writes = True        # (what it writes is not known)
        return result
    result.function = f
    prov = _Provenance(f, pointers)
    used = set()
    for inst in f.instructions():
        uses, _ = uses_and_defs(inst)
        used |= {id(r) for r in uses}
    for inst in f.instructions():
        why = _talks_across_blocks(inst)
        if why is not None and result.refusal is None:
            result.refusal = why
        _classify(inst, prov, used, result)
    return result


def _classify(inst: ir.Instruction, prov: _Provenance, used: set, result: KernelWrites) -> None:
    op = inst.opcode
    if op == "call" and any(isinstance(v, ir.Function) and v.is_declaration
                            for v in inst.operands):
        result.opaque_writes = True
    if op in _OPAQUE_WRITES or (op == "cp" and inst.spec.has("bulk")):
        result.opaque_writes = True
    space = _space(inst)
    if op in ("atom", "red", "st", "ld") and space in _GLOBALISH:
        bases = prov.of(inst.operands[1 if op in ("atom", "ld") else 0])
        if _untranslated(bases, space):
            result.untranslated.append(inst)
        own = bases - {UNKNOWN, HOSTMEM}
        result.fields |= {b for b in own if is_field(b)}
        if own and all(is_field(b) for b in own):
            result.field_accesses.append((inst, frozenset(own)))
    if op in ("atom", "red") and space in _GLOBALISH:
        bases = prov.of(inst.operands[1 if op == "atom" else 0])
        if space is None and bases <= {LOCAL}:
            return                       # a generic atomic on shared memory
        result.atomics.append(_atomic(inst, bases, used))
    elif op == "st" and space in _GLOBALISH:
        bases = prov.of(inst.operands[0])
        if space is not None or not bases <= {LOCAL}:
            result.stores.append((inst, bases))
    elif op == "ld" and space in _GLOBALISH:
        result.loads.append(prov.of(inst.operands[1]))
        result.load_insts.append((inst, result.loads[-1]))
    elif op.split(".")[0] in _OTHER_READS:
        result.other_reads = True


def _atomic(inst: ir.Instruction, bases: frozenset, used: set) -> Atomic:
    spec = inst.spec
    op = spec.get("op") or (spec.modifiers[-2] if len(spec.modifiers) > 1 else "")
    type_name = spec.types[-1] if spec.types else ""
    params = [b for b in bases if b not in (LOCAL, MODULE, UNKNOWN)]
    param = params[0] if len(params) == 1 and len(bases) == 1 else None
    merge = ATOMIC_MERGES.get((op, _type_kind(type_name)))
    if type_name not in _MERGED_TYPES:
        merge = None
    why = ""
    if param is None:
        why = "its address does not come from one pointer parameter"
    elif merge is None:
        why = (f"atom.{op}.{type_name}: only add, min, max, and, or, xor on 32- and 64-bit "
               "integers and add on f32/f64 are combined; with others the result depends on "
               "the order of blocks")
    elif inst.opcode == "atom" and isinstance(inst.operands[0], ir.Register) and \
            id(inst.operands[0]) in used:
        why = f"atom.{op}.{type_name} returns a value the kernel uses, which depends on the " \
              "order of blocks"
    if spec.get("sem") in ("acquire", "release", "acq_rel"):
        why = why or f"atom.{op} with .{spec.get('sem')} synchronises with other blocks"
    return Atomic(param, op, type_name, None if why else merge, why)


# -- affine addresses at a launch ------------------------------------------------------------

_TYPE_BITS = {"8": 8, "16": 16, "32": 32, "64": 64}


@dataclass(frozen=True)
class StoreForm:
    """A store's address: base parameter + const + sum(coef * %ctaid.axis) + sum(coef *
    %tid.axis), and its width in bytes."""

    param: str
    const: int
    ctaid: tuple[int, int, int]
    tid: tuple[int, int, int]
    width: int

    def hull(self, box, block) -> tuple[int, int]:
        """[start, end) byte offsets from the parameter's address that the store may write
        for the blocks of `box` (per axis: first and last block, inclusive)."""
        lo = hi = self.const
        for coef, (first, last) in zip(self.ctaid, box, strict=True):
            lo += min(coef * first, coef * last)
            hi += max(coef * first, coef * last)
        for coef, n in zip(self.tid, block, strict=True):
            lo += min(0, coef * (n - 1))
            hi += max(0, coef * (n - 1))
        return lo, hi + self.width


def _fits(lo: int, hi: int, type_name: str) -> bool:
    bits = _TYPE_BITS.get(type_name[1:])
    if bits is None:
        return False
    if type_name[0] == "s":
        return -(1 << (bits - 1)) <= lo and hi < 1 << (bits - 1)
    return 0 <= lo and hi < 1 << bits


class _Affine:
    """Registers' values as affine forms {symbol: coef} + const, at one launch shape."""

    def __init__(self, f: ir.Function, grid, block, scalars: dict[str, int],
                 pointers: set[str]):
        self.grid, self.block, self.scalars, self.pointers = grid, block, scalars, pointers
        self.defs: dict[int, list[ir.Instruction]] = {}
        self.before: dict[int, dict[int, ir.Instruction]] = {}  # the def reaching each use
        for block in f.blocks:
            last: dict[int, ir.Instruction] = {}
            for inst in block.instructions:
                self.before[id(inst)] = dict(last)
                if inst.operands and isinstance(inst.operands[0], ir.Register) and \
                        _defines(inst):
                    self.defs.setdefault(id(inst.operands[0]), []).append(inst)
                    last[id(inst.operands[0])] = inst
        self.memo: dict[int, dict | None] = {}

    def range(self, form: dict) -> tuple[int, int]:
        lo = hi = form.get("const", 0)
        for key, coef in form.items():
            if key == "const" or key[0] == "param":
                continue
            n = (self.grid if key[0] == "ctaid" else self.block)[key[1]] - 1
            lo += min(0, coef * n)
            hi += max(0, coef * n)
        return lo, hi

    def _checked(self, form: dict | None, type_name: str) -> dict | None:
        if form is None:
            return None
        if any(k != "const" and k[0] == "param" for k in form):
            return form if type_name[1:] == "64" else None
        return form if _fits(*self.range(form), type_name) else None

    def value(self, v, at: ir.Instruction) -> dict | None:
        """The value of operand `v` when instruction `at` runs: a register's definition is
        the last one before `at` in its block, else its only one."""
        if isinstance(v, ir.IntImm):
            return {"const": v.value}
        if isinstance(v, ir.SpecialRegister) and v.component in ("x", "y", "z"):
            axis = "xyz".index(v.component)
            return {"%tid": {("tid", axis): 1}, "%ctaid": {("ctaid", axis): 1},
                    "%ntid": {"const": self.block[axis]},
                    "%nctaid": {"const": self.grid[axis]}}.get(v.name)
        if not isinstance(v, ir.Register):
            return None
        definition = self.before[id(at)].get(id(v))
        if definition is None:
            defs = self.defs.get(id(v), [])
            definition = defs[0] if len(defs) == 1 else None
        if definition is None or definition.guard is not None:
            return None
        key = id(definition)
        if key not in self.memo:
            self.memo[key] = None          # (a cycle through this definition: not affine)
            self.memo[key] = self._definition(definition)
        return self.memo[key]

    def _definition(self, inst: ir.Instruction) -> dict | None:
        op, ops, types = inst.opcode, inst.operands, inst.spec.types
        if op == "ld" and _space(inst) == "param":
            base = _address_base(ops[1])
            if not isinstance(base, ir.Variable) or ops[1].offset:
                return None
            if base.name in self.pointers:
                return {("param", base.name): 1}
            value = self.scalars.get(base.name)
            return None if value is None else {"const": value}
        if op == "mov" or (op == "cvta" and inst.spec.get("space") in ("global", None)):
            return self.value(ops[1], inst)
        if op == "cvt" and len(types) == 2 and types[0][0] in "us" and types[1][0] in "us":
            source = self._checked(self.value(ops[1], inst), types[1])
            return self._checked(source, types[0])
        if op in ("add", "sub", "mul", "mad", "shl") and types and not inst.spec.has("cc"):
            return self._arithmetic(inst, types[0])
        return None

    def _arithmetic(self, inst: ir.Instruction, type_name: str) -> dict | None:
        op, ops = inst.opcode, inst.operands
        args = [self._checked(self.value(v, inst), type_name) for v in ops[1:]]
        if any(a is None for a in args):
            return None
        wide = inst.spec.get("mode") == "wide"
        out_type = f"{type_name[0]}{2 * int(type_name[1:])}" if wide else type_name
        if op in ("add", "sub"):
            sign = 1 if op == "add" else -1
            form = dict(args[0])
            for k, c in args[1].items():
                form[k] = form.get(k, 0) + sign * c
        elif op == "shl":
            if set(args[1]) != {"const"}:
                return None
            form = {k: c << args[1]["const"] for k, c in args[0].items()}
        else:
            form = _product(args[0], args[1])
            if form is not None and op == "mad":
                for k, c in args[2].items():
                    form[k] = form.get(k, 0) + c
        if form is None or (op in ("mul", "mad") and not wide and
                            inst.spec.get("mode") not in ("lo", None)):
            return None
        return self._checked(form, out_type)


def _product(a: dict, b: dict) -> dict | None:
    if set(a) == {"const"}:
        a, b = b, a
    if set(b) != {"const"}:
        return None
    return {k: c * b["const"] for k, c in a.items()}


def _width(inst: ir.Instruction) -> int:
    bits = _TYPE_BITS.get(inst.spec.types[-1][1:], 8) if inst.spec.types else 8
    vector = next((int(m[1:]) for m in inst.spec.modifiers
                   if m in ("v2", "v4", "v8")), 1)
    return bits // 8 * vector


def store_offsets(writes: KernelWrites, grid, block, scalars: dict[str, int],
                  pointers: set[str]) -> list[StoreForm | None]:
    """Each store's address at a launch of `grid` x `block` with scalar arguments
    `scalars` (parameter name -> integer value): a StoreForm, or None where it is not an
    affine function of the block and thread index off one pointer parameter."""
    return _access_offsets(writes, writes.stores, 0, grid, block, scalars, pointers)


def load_offsets(writes: KernelWrites, grid, block, scalars: dict[str, int],
                 pointers: set[str]) -> list[StoreForm | None]:
    """As store_offsets, of each global load (writes.load_insts): the bytes it reads."""
    return _access_offsets(writes, writes.load_insts, 1, grid, block, scalars, pointers)


def _access_offsets(writes: KernelWrites, accesses, operand: int, grid, block, scalars,
                    pointers) -> list[StoreForm | None]:
    if writes.function is None:
        return [None] * len(accesses)
    affine = _Affine(writes.function, grid, block, scalars, pointers)
    forms = []
    for inst, bases in accesses:
        address = inst.operands[operand]
        form = affine.value(address.base, inst) if isinstance(address, ir.Address) else None
        params = [k for k in (form or {}) if k != "const" and k[0] == "param"]
        if form is None or len(params) != 1 or form[params[0]] != 1 or \
                bases != frozenset((params[0][1],)):
            forms.append(None)
            continue
        coef = {k: c for k, c in form.items() if k != "const" and k[0] != "param"}
        forms.append(StoreForm(
            params[0][1], form.get("const", 0) + address.offset,
            tuple(coef.get(("ctaid", a), 0) for a in range(3)),
            tuple(coef.get(("tid", a), 0) for a in range(3)), _width(inst)))
    return forms
