"""Which kernels the warp-gang path takes: explicit checks on the IR, before anything is
lowered, naming what the path does not lower (the kernel then runs thread by thread).
"""

from __future__ import annotations

from ptxport.codegen.ops.data import state_space, vector_count
from ptxport.codegen.targets.cpu.gang.mma import ldmatrix_refusal, mma_refusal
from ptxport.codegen.targets.cpu.gang.wgmma import wgmma_refusal
from ptxport.ir import nodes as ir

# --- which kernels ----------------------------------------------------------------------------

SIMPLE_OPCODES = {"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg",
           "min", "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "set", "selp",
           "slct", "mov", "cvt", "cvta", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin",
           "cos", "tanh", "copysign", "testp", "bfe", "bfi", "prmt", "lop3", "shf", "popc",
           "clz", "brev", "bfind", "membar", "fence", "nanosleep", "prefetch", "prefetchu",
           "szext", "bmsk"}
_MEMORY_GROUPS = {"space", "sem", "scope", "nc", "vec", "cop"}
_ATOMIC_OPS = {"add", "min", "max", "and", "or", "xor", "exch", "cas"}
# Kernels with warp matrix instructions (mma, ldmatrix) longer than this run thread by
# thread, where their code compiles in seconds: the gang code of blas/kernels/gemm.cu's mma
# kernel (1550 PTX instructions, most of them the unrolled, bounds-checked tile loads and
# 16-bit shared stores around 16 mma) is ~150k lines of LLVM IR, which LLVM's optimizer
# took 517 s on here (thread by thread: 7 s). Kernels of this size ran thread by thread
# before the gang lowered mma, so this limit keeps their compile time.
MATRIX_KERNEL_LIMIT = 600
# the matrix instructions gang/mma.py and gang/wgmma.py lower, and which forms they refuse
_MATRIX_REFUSALS = {"mma": mma_refusal, "ldmatrix": ldmatrix_refusal, "wgmma": wgmma_refusal}


def refusal(module: ir.Module, kernel: ir.Function) -> str | None:
    """Why the gang path does not take `kernel` (None: it does)."""
    if any(v.space == "local" for v in kernel.variables.values()):
        return ".local memory"
    named = _variables_named(kernel)
    tables = [v.name for v in module.globals.values()
              if v.name in named and any(isinstance(item, ir.SymbolAddress) and
                                         isinstance(item.target, ir.Function)
                                         for item in v.init or [])]
    if tables:
        # its entries are the addresses of the device functions compiled with the kernel
        return f"'{tables[0]}': a table of function addresses (a C++ vtable)"
    instructions = list(kernel.instructions())
    if len(instructions) > MATRIX_KERNEL_LIMIT and any(
            i.opcode in ("mma", "ldmatrix") for i in instructions):
        return (f"warp matrix instructions in a kernel of {len(instructions)} instructions "
                f"(over {MATRIX_KERNEL_LIMIT}: its gang code would take LLVM minutes)")
    for inst in instructions:
        op, spec = inst.opcode, inst.spec
        types = spec.types
        if op in _MATRIX_REFUSALS:         # 16-bit floats in 32-bit registers: gang/mma.py
            why = _MATRIX_REFUSALS[op](inst)
            if why is not None:
                return why
            continue
        if any(t.endswith(("x2", "x4")) or t in ("f16", "bf16") for t in types) \
                and not _packs_two_f32(inst):
            return f"{spec.text}: 16-bit float or packed types"
        if spec.get("cc") or op in ("addc", "subc", "madc"):
            return f"{spec.text}: the carry flag"
        if op in SIMPLE_OPCODES:
            if op == "cvta" and state_space(inst) == "local":
                return f"{spec.text}: local memory"
            continue
        if op in ("ld", "ldu", "st"):
            space = state_space(inst)
            extra = [g for g in spec.groups if g not in _MEMORY_GROUPS
                     and not g.startswith(("level", "cache", "eviction", "L2", "L1"))]
            if extra:
                return f"{spec.text}: {', '.join(extra)}"
            if space == "local" or spec.get("sem") not in (None, "weak"):
                return f"{spec.text}: {space} space or memory ordering"
            if space == "param" and not _uniform_address(inst.operands[1 if op != "st" else 0]):
                return f"{spec.text}: a parameter read through a register"
            if op == "st" and space == "param":
                return f"{spec.text}: a parameter store"
            continue
        if op in ("atom", "red"):
            space = state_space(inst)
            if set(spec.groups) - {"space", "sem", "scope", "op"}:
                return f"{spec.text}: this atomic form"
            if space not in (None, "global", "shared") or spec.get("sem") not in (None, "relaxed") \
                    or spec.get("op") not in _ATOMIC_OPS or vector_count(inst) != 1:
                return f"{spec.text}: this atomic form"
            continue
        if op == "cp" and _copy_lowered(spec):
            continue
        if op in ("bra",):
            continue
        if op in ("ret", "exit"):
            continue
        if op in ("bar", "barrier"):
            if spec.has("warp"):
                if inst.guard is not None:
                    return f"{spec.text}: a guarded warp barrier"
                continue
            if spec.get("op") not in (None, "sync") or spec.get("scope") == "cluster" \
                    or len(inst.operands) != 1 or inst.guard is not None:
                return f"{spec.text}: counted, reducing or arrive-only barriers"
            continue
        if op in ("shfl", "vote", "activemask"):
            if op != "activemask" and not spec.has("sync"):
                return f"{spec.text}: warp operations without .sync"
            if op == "vote" and spec.get("mode") not in ("all", "any", "uni", "ballot"):
                return f"{spec.text}: this vote"
            if inst.guard is not None:
                return f"{spec.text}: a guarded warp operation"
            continue
        return f"{spec.text}: not lowered for warp gangs yet"
    return None


def _packs_two_f32(inst: ir.Instruction) -> bool:
    """cvt.{f16x2,bf16x2}.f32 d, a, b: two f32 into one 32-bit register (Triton's P before
    a wgmma whose A is in registers), which the shared lowering computes on lanes."""
    types = inst.spec.types
    return inst.opcode == "cvt" and types[1:] == ("f32",) and types[0] in ("f16x2", "bf16x2") \
        and inst.spec.get("rnd") in ("rn", "rz") and len(inst.operands) == 3


def _copy_lowered(spec) -> bool:
    """Whether gang/async_copy.py lowers this cp: cp.async from global to shared memory, its
    commit and waits."""
    kind = spec.get("kind") or ()
    if kind in (("async", "commit_group"), ("async", "wait_group"), ("async", "wait_all")):
        return True
    if kind == ("async", "mbarrier", "arrive"):
        return not spec.get("noinc")
    spaces = spec.get("space") or ("shared", "global")
    return kind == ("async",) and spaces[0].startswith("shared") and spaces[-1] == "global"


def _variables_named(kernel: ir.Function) -> set[str]:
    """The names of the variables the kernel's instructions name (or take addresses of)."""
    names: set[str] = set()

    def visit(value) -> None:
        if isinstance(value, ir.Variable):
            names.add(value.name)
        elif isinstance(value, ir.SymbolAddress):
            visit(value.target)
        elif isinstance(value, ir.Address):
            visit(value.base)
        elif isinstance(value, ir.VectorValue | ir.ListValue):
            for element in value.elements:
                visit(element)

    for inst in kernel.instructions():
        for operand in inst.operands:
            visit(operand)
    return names


def _uniform_address(operand) -> bool:
    return isinstance(operand, ir.Address) and not isinstance(operand.base, ir.Register)
