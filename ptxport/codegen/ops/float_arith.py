"""Floating-point arithmetic (PTX ISA 9.7.3 floating point, 9.7.4 half precision, 9.7.5 mixed
precision) for f32, f64, f16, bf16 and the packed f16x2, bf16x2 and f32x2: add sub mul fma mad
div min max abs neg copysign testp.

integer.py owns `add sub mul mad div min max abs neg` and hands their floating forms to
`FLOAT_FORMS`; fma, copysign and testp register here. float_special.py lowers rcp and sqrt
through `unary_arith`, the same exact-rounding path.

Results are the manual's bit for bit in every rounding mode. LLVM rounds to nearest even, so
.rn uses one LLVM operation where that rounds once as PTX does (f32 and f64; f16 and bf16
add/sub/mul through f32, whose double rounding is harmless since 24 >= 2 * 11 + 2). Everything
else — .rz .rm .rp, f16/bf16 fma — first computes the exact result as an unevaluated sum
hi + lo of two f64 here (`_exact`, `_f64_exact`), then rounds it with float_rounding.py,
unless the target rounds f32 add, sub, mul and fma in those modes itself (Target.rounded_f32:
the CPU's AVX-512 on a warp's lanes).

Where the manual leaves a result open, NVIDIA's hardware decides (measured on an H100):
- an f32, f16 or bf16 NaN result is the canonical NaN (all ones but the sign), abs and neg
  of a NaN included (an f32 add, sub, mul, fma, mad, div or ex2 into a register that only
  such arithmetic, min, max and comparisons read, ir.analysis.nan_blind_registers, keeps
  LLVM's NaN: no instruction can tell the two apart, and the FMA loops of GEMMs and a
  softmax's chains lose a compare and a blend per operation; min and max into such a
  register give either NaN of two, and into one whose zeros' sign nothing observes,
  ir.analysis.zero_sign_blind_registers, either of +0 and -0: a softmax's row maximum);
- an f64 NaN result keeps the payload of a NaN operand, quietened: b's before a's (fma: b,
  c, a; div: a, b); an invalid operation on numbers gives 0xFFF8000000000000; abs and neg
  return a NaN operand quietened, its sign unchanged;
- .ftz flushes subnormal operands to zeros of their sign, and a result to a zero of its sign
  when it is tiny after rounding (float_rounding.is_tiny says when);
- .sat gives +0 for NaN and -0; .relu gives +0 for -0 and the canonical NaN for NaN;
- min/max order -0 below +0 and return the other operand for one NaN, the canonical NaN for
  two (f64: b quietened); .xorsign.abs signs every non-NaN result;
- div.approx.f32 computes a * (1/b): for 2**126 < |b| it gives a zero (NaN for infinite a);
- testp.normal is true for zeros too.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, FunctionLowering, lowering
from ptxport.codegen.ops.float_format import (
    BF16,
    F16,
    F32,
    F32_LL,
    F64,
    F64_LL,
    FTZ_TYPES,
    FloatFormat,
    absolute,
    canonical,
    const_bits,
    constant,
    element,
    f64_nan,
    fconst,
    float_call,
    flush,
    from_bits,
    from_f32,
    is_nan,
    is_negative,
    magnitude_bits,
    quiet,
    read_lanes,
    select,
    to_bits,
    to_f32,
    to_f64,
    with_sign,
    write_lanes,
    zero_like,
)
from ptxport.codegen.ops.float_rounding import (
    is_tiny,
    ldexp,
    round_f64,
    round_narrow,
    split,
    two_sum,
)
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import (
    finite_registers,
    nan_blind_registers,
    zero_sign_blind_registers,
)
from ptxport.ir.types import TYPES, Type

__all__ = ["FLOAT_FORMS", "unary_arith"]


# --- add sub mul fma mad div ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Mode:
    rnd: str = "rn"
    ftz: bool = False
    sat: bool = False
    relu: bool = False


def _exact(fl: FunctionLowering, op: str, xs: list) -> tuple[ll.Value, ll.Value]:
    """The exact result of op on f64 images of f32/f16/bf16 operands, as hi + lo (only the
    sign of lo is exact for div and sqrt). Products of such operands are exact in f64."""
    b = fl.b
    if op == "add":
        return two_sum(fl, xs[0], xs[1])
    if op == "sub":
        return two_sum(fl, xs[0], b.fneg(xs[1]))
    if op == "mul":
        return b.fmul(xs[0], xs[1]), fconst(F64_LL, 0.0)
    if op == "fma":
        return two_sum(fl, b.fmul(xs[0], xs[1]), xs[2])
    if op == "sqrt":
        root = float_call(fl, "sqrt", xs[0])
        return root, b.fma(b.fneg(root), root, xs[0])
    dividend, divisor = (fconst(F64_LL, 1.0), xs[0]) if op == "rcp" else xs
    q = b.fdiv(dividend, divisor)
    return q, b.fmul(b.fma(b.fneg(q), divisor, dividend), divisor)


def _native(fl: FunctionLowering, op: str, xs: list) -> ll.Value:
    """op in the operands' own type (f32 or f64), rounded to nearest even once."""
    b = fl.b
    if op == "add":
        return b.fadd(xs[0], xs[1])
    if op == "sub":
        return b.fsub(xs[0], xs[1])
    if op == "mul":
        return b.fmul(xs[0], xs[1])
    if op == "fma":
        return b.fma(xs[0], xs[1], xs[2])
    if op == "sqrt":
        return float_call(fl, "sqrt", xs[0])
    if op == "rcp":
        return b.fdiv(fconst(xs[0].type, 1.0), xs[0])
    return b.fdiv(xs[0], xs[1])


def _rm_zero(fl: FunctionLowering, op: str, xs: list) -> ll.Value:
    """Whether an exactly zero sum is -0 when rounding down: IEEE 754 gives -0 unless both
    addends are +0, which is the sign of -(-x + -y) rounded to nearest."""
    b = fl.b
    if op == "fma":
        negated = [b.fneg(xs[0]), xs[1], b.fneg(xs[2])]
    else:
        negated = [b.fneg(x) for x in xs]
    return b.not_(is_negative(fl, _native(fl, op, negated), F64))


def _signed_zero(fl: FunctionLowering, fmt: FloatFormat, negative: ll.Value) -> ll.Value:
    return from_bits(fl, fl.b.select(negative, const_bits(fmt, fmt.sign), const_bits(fmt, 0)),
                     fmt)


def _narrow_arith(fl: FunctionLowering, op: str, fmt: FloatFormat, xs: list,
                  mode: _Mode, any_nan: bool = False) -> ll.Value:
    """op on f32/f16/bf16 lanes `xs` (already flushed for .ftz) in `mode`; `any_nan`: a NaN
    result may stay whichever NaN LLVM's operation gives (nan_blind_registers)."""
    b = fl.b
    # One f32 operation rounds f16 and bf16 sums and products harmlessly twice.
    native = mode.rnd == "rn" and (fmt is F32 or op in ("add", "sub", "mul"))
    # the exact result only where rounding or .ftz reads it (LLVM would drop it unread, but
    # only after its passes had spent time on every such operation's f64 code)
    if fmt is F32 and not native and not mode.ftz:
        # (.ftz's tininess is decided on the exact result: below)
        r = fl.target.rounded_f32(fl, op, xs, mode.rnd)
        if r is not None:
            return r if any_nan else canonical(fl, r, fmt)
    wide = hi = lo = None
    if not native or (mode.ftz and op not in ("add", "sub")):
        wide = [to_f64(fl, x, fmt) for x in xs]
        hi, lo = _exact(fl, op, wide)
    r = from_f32(fl, _native(fl, op, [to_f32(fl, x, fmt) for x in xs]), fmt) if native \
        else round_narrow(fl, hi, lo, fmt, mode.rnd)
    if mode.rnd == "rm" and op in ("add", "sub", "fma"):
        exact_zero = b.fcmp_ordered("==", hi, fconst(F64_LL, 0.0))
        r = b.select(exact_zero, _signed_zero(fl, fmt, _rm_zero(fl, op, wide)), r)
    if mode.ftz and op in ("add", "sub"):
        # Sums of fmt values below the smallest normal are exact: tiny means subnormal.
        r = flush(fl, r, fmt)
    elif mode.ftz:
        r = b.select(is_tiny(fl, hi, lo, fmt, mode.rnd), zero_like(fl, r, fmt), r)
    return r if any_nan and fmt is F32 else canonical(fl, r, fmt)


def _f64_exact(fl: FunctionLowering, op: str, xs: list):
    """(hi, lo, scale, exact_zero) with the exact result (hi + lo) * 2**scale of op on finite,
    nonzero f64 operands; the operands' exponents are split off first so that no residual
    underflows."""
    b = fl.b
    zero32 = ll.Constant(I32, 0)
    if op in ("add", "sub"):
        y = xs[1] if op == "add" else b.fneg(xs[1])
        hi, lo = two_sum(fl, xs[0], y)
        return hi, lo, zero32, b.fcmp_ordered("==", hi, fconst(F64_LL, 0.0))
    if op == "sqrt":
        m, e = split(fl, xs[0])
        odd = b.trunc(e, I1)
        m = b.select(odd, b.fmul(m, fconst(F64_LL, 2.0)), m)
        e = b.sub(e, b.zext(odd, I32))
        root = float_call(fl, "sqrt", m)
        return root, b.fma(b.fneg(root), root, m), b.ashr(e, ll.Constant(I32, 1)), None
    if op in ("div", "rcp"):
        dividend, divisor = (fconst(F64_LL, 1.0), xs[0]) if op == "rcp" else xs
        ma, ea = split(fl, dividend)
        mb, eb = split(fl, divisor)
        q = b.fdiv(ma, mb)
        return q, b.fmul(b.fma(b.fneg(q), mb, ma), mb), b.sub(ea, eb), None
    ma, ea = split(fl, xs[0])
    mb, eb = split(fl, xs[1])
    scale = b.add(ea, eb)
    if op == "mul":
        p = b.fmul(ma, mb)
        return p, b.fma(ma, mb, b.fneg(p)), scale, None
    return _f64_fma_exact(fl, ma, mb, scale, xs[2])


def _f64_fma_exact(fl: FunctionLowering, ma, mb, scale, c):
    """fma's exact result, the product's exponent split off: (hi, lo, scale, exact_zero)."""
    b = fl.b
    zero = fconst(F64_LL, 0.0)
    mc, ec = split(fl, c)
    c_zero = b.fcmp_ordered("==", c, zero)
    distance = b.sub(ec, scale)
    # c far below the product only decides the sticky sign; far above, the product does.
    near = ldexp(fl, mc, b.select(b.icmp_signed("<", distance, ll.Constant(I32, -900)),
                                  ll.Constant(I32, -900), distance))
    c_scaled = b.select(c_zero, zero, near)
    r1 = b.fma(ma, mb, c_scaled)
    u1 = b.fmul(ma, mb)
    u2 = b.fma(ma, mb, b.fneg(u1))
    alpha1, z = two_sum(fl, c_scaled, u2)
    beta1, beta2 = two_sum(fl, u1, alpha1)
    gamma = b.fadd(b.fsub(beta1, r1), beta2)
    r2 = b.fadd(gamma, z)
    r3 = b.fsub(z, b.fsub(r2, gamma))
    lo = b.fadd(r2, r3)
    c_dominates = b.and_(b.not_(c_zero), b.icmp_signed(">", distance, ll.Constant(I32, 1000)))
    hi = b.select(c_dominates, c, r1)
    lo = b.select(c_dominates, u1, lo)
    scale = b.select(c_dominates, ll.Constant(I32, 0), scale)
    return hi, lo, scale, b.and_(b.not_(c_dominates), b.fcmp_ordered("==", r1, zero))


def _ordinary(fl: FunctionLowering, op: str, xs: list) -> ll.Value:
    """Whether the operands take the directed-rounding path: finite, and nonzero where a zero
    makes the result exact (factors, divisor and dividend, square root operand)."""
    b = fl.b
    zero, inf = fconst(F64_LL, 0.0), fconst(F64_LL, float("inf"))
    ordinary = None
    for i, x in enumerate(xs):
        size = float_call(fl, "fabs", x)
        ok = b.fcmp_ordered("<", size, inf)
        if op not in ("add", "sub") and not (op == "fma" and i == 2):
            ok = b.and_(ok, b.fcmp_ordered(">", size, zero))
        ordinary = ok if ordinary is None else b.and_(ordinary, ok)
    if op == "sqrt":
        ordinary = b.and_(ordinary, b.not_(is_negative(fl, xs[0], F64)))
    return ordinary


def _f64_arith(fl: FunctionLowering, op: str, xs: list, mode: _Mode) -> ll.Value:
    b = fl.b
    r = _native(fl, op, xs)
    if mode.rnd != "rn":
        hi, lo, scale, exact_zero = _f64_exact(fl, op, xs)
        directed = round_f64(fl, hi, lo, scale, mode.rnd)
        if exact_zero is not None:
            negative = _rm_zero(fl, op, xs) if mode.rnd == "rm" else is_negative(fl, r, F64)
            directed = b.select(exact_zero, _signed_zero(fl, F64, negative), directed)
        r = b.select(_ordinary(fl, op, xs), directed, r)
        if op == "fma" and mode.rnd == "rm":
            # A zero factor and a zero c: the zero sum's sign when rounding down.
            zero, inf = fconst(F64_LL, 0.0), fconst(F64_LL, float("inf"))
            zeros = [b.fcmp_ordered("==", x, zero) for x in xs]
            finite = [b.fcmp_ordered("<", float_call(fl, "fabs", x), inf) for x in xs[:2]]
            both = b.and_(b.and_(b.or_(zeros[0], zeros[1]), zeros[2]), b.and_(*finite))
            r = b.select(both, _signed_zero(fl, F64, _rm_zero(fl, op, xs)), r)
    if op in ("div", "rcp", "sqrt"):
        return f64_nan(fl, r, xs)
    return f64_nan(fl, r, [xs[1], xs[2], xs[0]] if op == "fma" else [xs[1], xs[0]])


def _finish(fl: FunctionLowering, r: ll.Value, fmt: FloatFormat, mode: _Mode) -> ll.Value:
    """.sat and .relu on a rounded result."""
    b = fl.b
    if mode.sat:
        wide = to_f32(fl, r, fmt) if fmt is not F64 else r
        zero, one = constant(fl, fmt, 0), constant(fl, fmt, _one_bits(fmt))
        positive = b.fcmp_ordered(">", wide, fconst(wide.type, 0.0))
        r = b.select(positive, b.select(b.fcmp_ordered("<", wide, fconst(wide.type, 1.0)),
                                        r, one), zero)
    if mode.relu:
        wide = to_f32(fl, r, fmt)
        keep = b.or_(b.fcmp_ordered(">", wide, fconst(F32_LL, 0.0)), is_nan(fl, wide))
        r = b.select(keep, r, constant(fl, fmt, 0))
    return r


def _one_bits(fmt: FloatFormat) -> int:
    return ((1 << (fmt.bits - fmt.precision - 1)) - 1) << (fmt.precision - 1)


def _arith(fl: FunctionLowering, inst: ir.Instruction, op: str, fmt: FloatFormat, xs: list,
           mode: _Mode, any_nan: bool = False) -> ll.Value:
    if fmt is F64:
        return _f64_arith(fl, op, xs, mode)
    if mode.ftz:
        xs = [flush(fl, x, fmt) for x in xs]
    return _finish(fl, _narrow_arith(fl, op, fmt, xs, mode, any_nan), fmt, mode)


def nan_blind(fl: FunctionLowering, dest) -> bool:
    """Whether no instruction can tell which NaN register `dest` holds (or it never holds
    one: its bounds are proved finite)."""
    if fl.nan_blind is None:
        fl.nan_blind = nan_blind_registers(fl.function)
    if fl.finite is None:
        fl.finite = finite_registers(fl.function)
    return isinstance(dest, ir.Register) and (dest in fl.nan_blind or dest in fl.finite)


def zero_sign_blind(fl: FunctionLowering, dest) -> bool:
    """Whether no instruction can tell +0 from -0 in register `dest`."""
    if fl.zero_sign_blind is None:
        fl.zero_sign_blind = zero_sign_blind_registers(fl.function)
    return isinstance(dest, ir.Register) and dest in fl.zero_sign_blind


def _mode(fl: FunctionLowering, inst: ir.Instruction, t: Type) -> _Mode:
    spec = inst.spec
    if spec.get("ftz") and t.name not in FTZ_TYPES:
        raise fl.unsupported(inst, f".ftz is not defined for .{t.name}")
    if spec.get("oob"):
        raise fl.unsupported(inst, ".oob (operands from out-of-bounds tensor loads)")
    return _Mode(spec.get("rnd") or "rn", bool(spec.get("ftz")), bool(spec.get("sat")),
                 bool(spec.get("relu")))


def _lanewise(fl: FunctionLowering, inst: ir.Instruction, op: str, count: int) -> None:
    """add sub mul fma mad: d = op(a, b{, c}) lane by lane; mixed precision (add.f32.f16,
    fma.rn.f32.bf16) widens the narrow operands (a, and b for fma) to f32 first, exactly."""
    types = inst.spec.types
    t = TYPES[types[0]]
    fmt, lanes = element(fl, inst, t)
    mode = _mode(fl, inst, t)
    sources = inst.operands[1:1 + count]
    if len(types) == 2:
        narrow_t = TYPES[types[1]]
        narrow, _ = element(fl, inst, narrow_t)
        if fmt is not F32 or narrow not in (F16, BF16):
            raise fl.unsupported(inst, f"the type pair .{types[0]}.{types[1]}")
        widened = count - 1
        columns = [[to_f32(fl, fl.read(o, narrow_t), narrow)] for o in sources[:widened]]
        columns += [[fl.read(sources[-1], t)]]
    else:
        columns = [read_lanes(fl, o, t, fmt, lanes) for o in sources]
    any_nan = lanes == 1 and not mode.sat and not mode.relu and \
        nan_blind(fl, inst.operands[0])
    results = [_arith(fl, inst, op, fmt, list(xs), mode, any_nan)
               for xs in zip(*columns, strict=True)]
    write_lanes(fl, inst.operands[0], results, t, fmt)


def add(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _lanewise(fl, inst, "add", 2)


def sub(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _lanewise(fl, inst, "sub", 2)


def mul(fl: FunctionLowering, inst: ir.Instruction) -> None:
    if inst.spec.get("mode"):
        raise fl.unsupported(inst, f".{inst.spec.get('mode')} on a floating-point mul")
    _lanewise(fl, inst, "mul", 2)


@lowering("fma")
def fma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """fma.rnd{.ftz}{.sat}{.relu}.type d, a, b, c: a * b + c rounded once."""
    _lanewise(fl, inst, "fma", 3)


def mad(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mad.rnd{.ftz}{.sat}.f32 and mad.rnd.f64 are fma (sm_20 on). Without a rounding
    modifier (sm_1x only; ptxas refuses it for later targets) it is taken as .rn."""
    if inst.spec.get("mode") or inst.spec.get("cc"):
        raise fl.unsupported(inst, "an integer modifier on a floating-point mad")
    _lanewise(fl, inst, "fma", 3)


def unary_arith(fl: FunctionLowering, inst: ir.Instruction, op: str) -> None:
    """rcp or sqrt (`op`) on a scalar f32 or f64 operand, rounded as the instruction says by
    the path add and fma take (float_special.py's rcp and sqrt lowerings call it)."""
    t = TYPES[inst.spec.types[0]]
    fmt, count = element(fl, inst, t)
    if fmt not in (F32, F64) or count != 1:
        raise fl.unsupported(inst, f"{inst.opcode} on .{t.name}")
    mode = _mode(fl, inst, t)
    x = fl.read(inst.operands[1], t)
    fl.write(inst.operands[0], _arith(fl, inst, op, fmt, [x], mode), t)


def div(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """div.rnd{.ftz}.f32, div.rnd.f64 (IEEE); div.full{.ftz}.f32 (2 ulp: computed exactly,
    or without .ftz by a divisor that other div.full instructions share as a product by its
    reciprocal, _by_reciprocal);
    div.approx{.ftz}.f32 (a * (1/b): 2 ulp for |b| in [2**-126, 2**126])."""
    t = TYPES[inst.spec.types[0]]
    fmt, count = element(fl, inst, t)
    if fmt not in (F32, F64) or count != 1:
        raise fl.unsupported(inst, f"div on .{t.name}")
    precision = inst.spec.get("precision")
    if precision and (fmt is F64 or inst.spec.get("rnd")):
        raise fl.unsupported(inst, f"div.{precision} with .{t.name} or a rounding modifier")
    mode = _mode(fl, inst, t)
    a, b_ = (fl.read(o, t) for o in inst.operands[1:3])
    if precision == "full" and fmt is F32 and not mode.ftz and _shared_divisor(fl, inst):
        fl.write(inst.operands[0], _by_reciprocal(fl, a, b_, nan_blind(fl, inst.operands[0])),
                 t)
        return
    result = _arith(fl, inst, "div", fmt, [a, b_], mode, nan_blind(fl, inst.operands[0]))
    if precision == "approx":
        b = fl.b
        divisor = flush(fl, b_, fmt) if mode.ftz else b_
        huge = b.fcmp_ordered(">", float_call(fl, "fabs", divisor), fconst(F32_LL, 2.0 ** 126))
        zero = from_bits(fl, b.and_(to_bits(fl, divisor, F32), const_bits(F32, F32.sign)), F32)
        dividend = flush(fl, a, fmt) if mode.ftz else a
        result = b.select(huge, canonical(fl, b.fmul(dividend, zero), F32), result)
    fl.write(inst.operands[0], result, t)


def _shared_divisor(fl: FunctionLowering, inst: ir.Instruction) -> bool:
    """Whether inst's divisor is a register that other div.full instructions divide by too
    (a softmax's row sum: each thread's elements by it)."""
    counts = fl.full_divisors
    if counts is None:
        counts = fl.full_divisors = {}
        for other in fl.function.instructions():
            if other.opcode == "div" and other.spec.get("precision") == "full" and \
                    isinstance(other.operands[2], ir.Register):
                counts[other.operands[2]] = counts.get(other.operands[2], 0) + 1
    return counts.get(inst.operands[2], 0) > 1



def _by_reciprocal(fl: FunctionLowering, a: ll.Value, divisor: ll.Value,
                   any_nan: bool) -> ll.Value:
    """div.full.f32 (2 ulp) as (a * s) * (1 / (b * s)): one division for all the quotients
    of a divisor (LLVM computes the reciprocal once), a multiplication each (a division
    each took 10 cycles of a Xeon core per 16 lanes). s is 1 where |b| lies in [2**-126,
    2**126], else 2**-64 or 2**64, exact scalings that make the reciprocal a normal number
    (a subnormal one would lose bits); a quotient that is neither 0 nor infinite keeps a * s
    in range then. Two roundings: within 2**-23 of the quotient, 2 ulp. b = 0, inf or NaN,
    a = 0, inf or NaN give the quotient's 0, inf or NaN."""
    b = fl.b
    magnitude = float_call(fl, "fabs", divisor)
    scale = b.select(b.fcmp_ordered(">", magnitude, fconst(F32_LL, 2.0 ** 126)),
                     fconst(F32_LL, 2.0 ** -64),
                     b.select(b.fcmp_ordered("<", magnitude, fconst(F32_LL, 2.0 ** -126)),
                              fconst(F32_LL, 2.0 ** 64), fconst(F32_LL, 1.0)))
    reciprocal = b.fdiv(fconst(F32_LL, 1.0), b.fmul(divisor, scale))
    q = b.fmul(b.fmul(a, scale), reciprocal)
    return q if any_nan else canonical(fl, q, F32)


# --- min max abs neg copysign testp ---------------------------------------------------------------

def _select_min_max(fl: FunctionLowering, fmt: FloatFormat, x, y, is_max: bool,
                    propagate_nan: bool, signless: bool = False,
                    any_nan: bool = False) -> ll.Value:
    """min/max of two lanes: -0 below +0, one NaN gives the other operand (unless .NaN).
    `signless`: no instruction sees the sign of the result's zero, so equal operands give
    either; `any_nan`: none tells NaNs apart (ir.analysis), so two NaNs give either."""
    b = fl.b
    xw, yw = (to_f32(fl, v, fmt) if fmt is not F64 else v for v in (x, y))
    x_nan, y_nan = is_nan(fl, xw), is_nan(fl, yw)
    # x where it is beyond y or y is a NaN; y otherwise (x a NaN, or y beyond or equal)
    r = select(fl, b.or_(b.fcmp_ordered(">" if is_max else "<", xw, yw), y_nan), x, y, fmt)
    if not signless:
        # equal operands differ at most as +0 and -0: the AND of their bits is +0, the OR -0
        bits = (b.and_ if is_max else b.or_)(to_bits(fl, x, fmt), to_bits(fl, y, fmt))
        r = select(fl, b.fcmp_ordered("==", xw, yw), from_bits(fl, bits, fmt), r, fmt)
    if any_nan and not propagate_nan:
        return r            # two NaNs: y, a NaN
    nan = quiet(fl, y) if fmt is F64 else constant(fl, fmt, fmt.nan)
    both = b.or_(x_nan, y_nan) if propagate_nan else b.and_(x_nan, y_nan)
    return select(fl, both, nan, r, fmt)


def _min_max(fl: FunctionLowering, inst: ir.Instruction, is_max: bool) -> None:
    """min/max{.ftz}{.NaN}{.xorsign.abs}.type d, a, b;  min/max{.ftz}{.NaN}{.abs}.f32 d, a, b, c."""
    spec = inst.spec
    t = TYPES[spec.types[0]]
    fmt, count = element(fl, inst, t)
    if spec.get("relu") or t.name == "f32x2":
        raise fl.unsupported(inst, f"this form of {inst.opcode}")
    if spec.get("ftz") and t.name not in FTZ_TYPES:
        raise fl.unsupported(inst, f".ftz is not defined for .{t.name}")
    xorsign = bool(spec.get("xorsign"))
    sources = inst.operands[1:]
    if xorsign and (not spec.get("abs") or len(sources) != 2):
        raise fl.unsupported(inst, ".xorsign needs .abs and two operands")
    if len(sources) == 3 and t.name != "f32":
        raise fl.unsupported(inst, f"three-operand {inst.opcode} on .{t.name}")
    b = fl.b
    columns = [read_lanes(fl, o, t, fmt, count) for o in sources]
    # where the result's zero sign and NaN bits go unseen (a softmax's row maximum)
    blind = (False, False) if fmt is not F32 or count != 1 or xorsign else \
        (zero_sign_blind(fl, inst.operands[0]), nan_blind(fl, inst.operands[0]))
    results = []
    for xs in zip(*columns, strict=True):
        xs = [flush(fl, x, fmt) if spec.get("ftz") else x for x in xs]
        sign = b.xor(is_negative(fl, xs[0], fmt), is_negative(fl, xs[1], fmt)) if xorsign else None
        if spec.get("abs"):
            xs = [absolute(fl, x, fmt) for x in xs]
        r = xs[0]
        for x in xs[1:]:
            r = _select_min_max(fl, fmt, r, x, is_max, bool(spec.get("nan")), *blind)
        if sign is not None:
            r = select(fl, is_nan(fl, r), r, with_sign(fl, r, sign, fmt), fmt)
        results.append(r)
    write_lanes(fl, inst.operands[0], results, t, fmt)


def min_(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _min_max(fl, inst, is_max=False)


def max_(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _min_max(fl, inst, is_max=True)


def _sign_op(fl: FunctionLowering, inst: ir.Instruction, negate: bool) -> None:
    """abs/neg: the sign bit; .ftz flushes first. A NaN gives the canonical NaN (f64: itself,
    quietened)."""
    t = TYPES[inst.spec.types[0]]
    fmt, count = element(fl, inst, t)
    if t.name == "f32x2":
        raise fl.unsupported(inst, f"{inst.opcode} on .f32x2")
    if inst.spec.get("ftz") and t.name not in FTZ_TYPES:
        raise fl.unsupported(inst, f".ftz is not defined for .{t.name}")
    b = fl.b
    # (an f32 result that only NaN-blind instructions read keeps the operand's NaN, sign
    # changed: nvcc's expf negates a sum on its way into an fma)
    any_nan = fmt is F32 and count == 1 and nan_blind(fl, inst.operands[0])
    results = []
    for x in read_lanes(fl, inst.operands[1], t, fmt, count):
        if inst.spec.get("ftz"):
            x = flush(fl, x, fmt)
        bits = to_bits(fl, x, fmt)
        bits = (b.xor(bits, const_bits(fmt, fmt.sign)) if negate
                else b.and_(bits, const_bits(fmt, fmt.sign - 1)))
        if any_nan:
            results.append(from_bits(fl, bits, fmt))
            continue
        nan = quiet(fl, x) if fmt is F64 else constant(fl, fmt, fmt.nan)
        results.append(select(fl, is_nan(fl, x), nan, from_bits(fl, bits, fmt), fmt))
    write_lanes(fl, inst.operands[0], results, t, fmt)


def abs_(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _sign_op(fl, inst, negate=False)


def neg(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _sign_op(fl, inst, negate=True)


@lowering("copysign")
def copysign(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """copysign.type d, a, b: b with a's sign bit (NaNs included)."""
    t = TYPES[inst.spec.types[0]]
    fmt, _ = element(fl, inst, t)
    a, b_ = (to_bits(fl, fl.read(o, t), fmt) for o in inst.operands[1:3])
    b = fl.b
    bits = b.or_(b.and_(a, const_bits(fmt, fmt.sign)), b.and_(b_, const_bits(fmt, fmt.sign - 1)))
    fl.write(inst.operands[0], from_bits(fl, bits, fmt), t)


@lowering("testp")
def testp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """testp.op.type p, a: the class of a (.normal: finite and not subnormal, zeros too)."""
    t = TYPES[inst.spec.types[0]]
    fmt, _ = element(fl, inst, t)
    b = fl.b
    magnitude = magnitude_bits(fl, fl.read(inst.operands[1], t), fmt)
    infinity = const_bits(fmt, fmt.infinity)
    test = inst.spec.get("test")
    if test == "finite":
        result = b.icmp_unsigned("<", magnitude, infinity)
    elif test == "infinite":
        result = b.icmp_unsigned("==", magnitude, infinity)
    elif test == "number":
        result = b.icmp_unsigned("<=", magnitude, infinity)
    elif test == "notanumber":
        result = b.icmp_unsigned(">", magnitude, infinity)
    else:
        subnormal = b.and_(b.icmp_unsigned("!=", magnitude, const_bits(fmt, 0)),
                           b.icmp_unsigned("<", magnitude,
                                           const_bits(fmt, 1 << (fmt.precision - 1))))
        if test == "subnormal":
            result = subnormal
        else:
            result = b.and_(b.icmp_unsigned("<", magnitude, infinity), b.not_(subnormal))
    fl.write(inst.operands[0], result, "pred")


FLOAT_FORMS = {"add": add, "sub": sub, "mul": mul, "mad": mad, "div": div, "min": min_,
               "max": max_, "abs": abs_, "neg": neg}
