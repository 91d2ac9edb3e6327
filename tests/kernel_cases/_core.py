"""What a whole-kernel case is, and how one is run and judged.

A case is data: a launch shape, a function that builds the kernel's arguments from a seeded
generator, and a numpy reference for the buffers the kernel writes. How the kernel is launched
is the caller's business (a `launcher`), so the same cases serve ptxport's CPU runtime, its
other backends, and NVIDIA's own driver (benchmarks/validate_cases_gpu.py).

The launcher contract:
- every Arg of kind "in", "out" or "inout" gets a device buffer holding `value`'s bytes, passed
  to the kernel as its address, unless `passed` is False (a buffer reached only through a
  pointer member of a struct argument);
- an Arg of kind "scalar" is passed as its numpy scalar's bytes, one of kind "struct" as its
  structured scalar's bytes, with each member named in `pointers` overwritten by the device
  address of the buffer of the Arg at that index;
- the kernel parameters are the passed Args, in order;
- the launcher returns {index: final contents} for every "out" and "inout" Arg, as arrays of
  the value's dtype and shape (raw bytes of the right size are accepted too).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Arg",
    "CaseReport",
    "KernelCase",
    "case_seed",
    "compare_outputs",
    "copy_args",
    "inout",
    "inp",
    "out",
    "run_case",
    "scalar",
    "seed_for",
    "struct",
]

BUFFER_KINDS = ("in", "out", "inout")
ARG_KINDS = (*BUFFER_KINDS, "scalar", "struct")


@dataclass
class Arg:
    """One kernel argument, or one buffer that a struct argument points at.

    kind : "in" (device buffer the kernel reads), "out" (device buffer it writes; `value` is
        its initial contents, usually a poison pattern so unwritten elements are noticed),
        "inout", "scalar" (numpy scalar passed by value) or "struct" (numpy structured scalar
        passed by value, with the C ABI layout given by its dtype's offsets and itemsize)
    pointers : struct only: member name -> index of the buffer Arg whose device address the
        member holds
    passed : False for a buffer that is not itself a kernel parameter
    bfloat16 : the uint16 value holds bfloat16 bit patterns (compared as numbers)
    """

    kind: str
    value: np.ndarray | np.generic
    pointers: dict[str, int] = field(default_factory=dict)
    passed: bool = True
    bfloat16: bool = False


def inp(value: np.ndarray, **kw) -> Arg:
    return Arg("in", np.ascontiguousarray(value), **kw)


def out(value: np.ndarray, **kw) -> Arg:
    return Arg("out", np.ascontiguousarray(value), **kw)


def inout(value: np.ndarray, **kw) -> Arg:
    return Arg("inout", np.ascontiguousarray(value), **kw)


def scalar(value: np.generic) -> Arg:
    if not isinstance(value, np.generic):
        raise TypeError(f"scalar arguments must be numpy scalars (np.int32(...)), not {value!r}")
    return Arg("scalar", value)


def struct(value: np.void, pointers: dict[str, int] | None = None) -> Arg:
    return Arg("struct", value, pointers=dict(pointers or {}))


@dataclass
class KernelCase:
    """One corpus kernel launched once on deterministic inputs, with its expected outputs.

    reference(args) gets the arguments as make_args built them (before the launch) and returns
    {argument index: expected final contents} for the out/inout buffers it checks. Floats are
    compared bit for bit (NaN equal to any NaN) unless rtol/atol or ulp is given; an element
    passes if it is within ulp units in the last place OR within atol + rtol * |expected|.
    Integers are always compared exactly. check, when given, replaces the comparison:
    check(args, got, expected) raises AssertionError.
    """

    file: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    make_args: Callable[[np.random.Generator], list[Arg]]
    reference: Callable[[list[Arg]], dict[int, np.ndarray]]
    rtol: float = 0
    atol: float = 0
    ulp: int | None = None
    check: Callable | None = None
    notes: str = ""

    @property
    def name(self) -> str:
        return f"{self.file}:{self.kernel}"


@dataclass
class CaseReport:
    """How close a launch came to the reference: the worst errors over all checked buffers."""

    case: KernelCase
    elements: int = 0
    max_abs: float = 0.0
    max_ulp: float = 0.0


def seed_for(file: str, kernel: str) -> int:
    """The generator seed of the case of `kernel` in `file`: derived from the names, so stable."""
    digest = hashlib.sha256(f"{file}:{kernel}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def case_seed(case: KernelCase) -> int:
    return seed_for(case.file, case.kernel)


def copy_args(args: list[Arg]) -> list[Arg]:
    return [copy.deepcopy(a) for a in args]


def run_case(case: KernelCase, launcher: Callable) -> CaseReport:
    """Build the case's arguments, launch it through `launcher`, compare with the reference.

    launcher(case, args) -> {argument index: final contents} (see the module docstring).
    Raises AssertionError naming the kernel, argument and first mismatching element.
    """
    args = case.make_args(np.random.default_rng(case_seed(case)))
    expected = case.reference(copy_args(args))
    got = launcher(case, copy_args(args))
    if case.check is not None:
        case.check(args, got, expected)
        return CaseReport(case)
    return compare_outputs(case, args, got, expected)


def compare_outputs(case: KernelCase, args: list[Arg], got: dict[int, np.ndarray],
                    expected: dict[int, np.ndarray]) -> CaseReport:
    report = CaseReport(case)
    for index, want in expected.items():
        if index not in got:
            raise AssertionError(f"{case.name}: the launcher returned no contents for argument "
                                 f"{index} ({args[index].kind} buffer)")
        want = np.asarray(want)
        have = _as_dtype(np.asarray(got[index]), want, case, index)
        bf16 = args[index].bfloat16
        _compare_one(case, index, have.ravel(), want.ravel(), bf16, report)
    return report


def _as_dtype(have: np.ndarray, want: np.ndarray, case: KernelCase, index: int) -> np.ndarray:
    if have.dtype != want.dtype:
        if have.nbytes != want.nbytes:
            raise AssertionError(f"{case.name}: argument {index}: got {have.nbytes} bytes "
                                 f"({have.dtype}), expected {want.nbytes} ({want.dtype})")
        have = np.ascontiguousarray(have).view(want.dtype)
    if have.size != want.size:
        raise AssertionError(f"{case.name}: argument {index}: got {have.size} elements, "
                             f"expected {want.size}")
    return have


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _ordered(x: np.ndarray) -> np.ndarray:
    """Float bits mapped to int64s that count ulps (-0.0 and +0.0 both map to 0)."""
    ibits = x.view({2: np.int16, 4: np.int32, 8: np.int64}[x.itemsize]).astype(np.int64)
    sign_mask = np.int64((1 << (8 * x.itemsize - 1)) - 1)
    return np.where(ibits < 0, -(ibits & sign_mask), ibits)


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|ordered(a) - ordered(b)| as float64: exact for small distances, without the int64
    overflow of a direct difference between large values of opposite signs."""
    oa, ob = _ordered(a), _ordered(b)
    halves = (oa >> 1) - (ob >> 1)
    return np.abs(halves.astype(np.float64) * 2 + ((oa & 1) - (ob & 1)))


def _compare_one(case: KernelCase, index: int, have: np.ndarray, want: np.ndarray, bf16: bool,
                 report: CaseReport) -> None:
    if bf16:
        have, want = _bf16_to_f32(have), _bf16_to_f32(want)
    report.elements += want.size
    if want.dtype.kind != "f":
        bad = have != want
        if bad.any():
            _fail(case, index, have, want, bad, None, None)
        return
    both_nan = np.isnan(have) & np.isnan(want)
    same_bits = (have.view(f"u{have.itemsize}") == want.view(f"u{want.itemsize}")) | both_nan
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = np.abs(have.astype(np.float64) - want.astype(np.float64))
        ulp_err = _ulp_distance(have, want)
    abs_err = np.where(same_bits, 0.0, abs_err)
    ulp_err = np.where(same_bits, 0.0, ulp_err)
    ok = same_bits.copy()
    if case.ulp is not None:
        ok |= ~np.isnan(have) & ~np.isnan(want) & (ulp_err <= case.ulp)
    if case.rtol or case.atol:
        with np.errstate(invalid="ignore", over="ignore"):
            bound = case.atol + case.rtol * np.abs(want.astype(np.float64))
            ok |= np.isfinite(abs_err) & (abs_err <= bound)
    finite = np.isfinite(abs_err)
    if finite.any():
        report.max_abs = max(report.max_abs, float(abs_err[finite].max()))
    ulps = ulp_err[~np.isnan(ulp_err)]
    if ulps.size:
        report.max_ulp = max(report.max_ulp, float(ulps.max()))
    if not ok.all():
        _fail(case, index, have, want, ~ok, abs_err, ulp_err)


def _fail(case: KernelCase, index: int, have: np.ndarray, want: np.ndarray, bad: np.ndarray,
          abs_err: np.ndarray | None, ulp_err: np.ndarray | None) -> None:
    where = np.flatnonzero(bad)
    first = int(where[0])
    lines = [f"{case.name}: argument {index}: {where.size} of {want.size} elements differ; "
             f"first at [{first}]: got {have[first]!r}, expected {want[first]!r}"]
    shown = ", ".join(f"[{int(j)}] {have[j]!r} vs {want[j]!r}" for j in where[1:6])
    if shown:
        lines.append(f"  next: {shown}")
    if abs_err is not None:
        worst_abs, worst_ulp = (float(np.max(e[bad], initial=0, where=~np.isnan(e[bad])))
                                for e in (abs_err, ulp_err))
        lines.append(f"  among mismatches: max abs error {worst_abs:.6g}, max ulp error "
                     f"{worst_ulp:.6g} (NaN against a number counts as neither; tolerance: "
                     f"ulp={case.ulp}, rtol={case.rtol}, atol={case.atol})")
    raise AssertionError("\n".join(lines))
