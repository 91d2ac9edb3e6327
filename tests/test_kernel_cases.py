"""The whole-kernel cases (tests/kernel_cases), checked without any hardware.

Every kernel of the corpus has exactly one case; cases are well-formed data; their arguments
are deterministic; references run, return the buffers' own dtypes and shapes, and describe a
kernel that actually did something (outputs differ from their initial contents, from the
inputs, and from a constant). run_case accepts a launcher that answers with the reference and
rejects one that gets a single element wrong, naming the kernel, argument and element. The
exact arithmetic models the references rest on are checked against rational arithmetic.
(Agreement with NVIDIA's hardware is benchmarks/validate_cases_gpu.py's job.)
"""

from __future__ import annotations

import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ptxport.frontends import nvrtc

# tests/ is not a package: make its helper modules importable whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import corpus_ptx, corpus_sources, entry_names
from kernel_cases import CASES, Arg, KernelCase, case_seed, copy_args, run_case
from kernel_cases._core import BUFFER_KINDS, compare_outputs
from kernel_cases._numerics import fma32, fma64, round_f64

IDS = [case.name for case in CASES]

# Outputs that are legitimately constant across their elements.
CONSTANT_OUTPUTS = {("clock_timing.cu", "clock32_delta", 0), ("clock_timing.cu", "timed_work", 2)}
# In/out buffers that legitimately end as they started (the kernel restores them).
RESTORED_OUTPUTS = {("fence_last_block.cu", "sum_last_block", 2)}
# Outputs that are legitimately a copy of an input (atomicExch stores x into the slots).
COPIED_OUTPUTS = {("atomics_int.cu", "atomics_i32", 2)}


def _args(case: KernelCase):
    return case.make_args(np.random.default_rng(case_seed(case)))


def _bytes(value) -> bytes:
    return np.ascontiguousarray(value).tobytes()


@pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is needed for the corpus's PTX")
def test_every_corpus_kernel_has_exactly_one_case():
    counts = Counter((case.file, case.kernel) for case in CASES)
    assert not [key for key, count in counts.items() if count > 1], "duplicate cases"
    expected = {(path.name, name) for path in corpus_sources()
                for name in entry_names(corpus_ptx(path, "sm_90"))}
    assert set(counts) - expected == set(), "cases for kernels the corpus does not have"
    assert expected - set(counts) == set(), "corpus kernels without a case"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_is_well_formed(case):
    for shape in (case.grid, case.block):
        assert len(shape) == 3 and all(isinstance(v, int) and v >= 1 for v in shape)
    assert case.block[0] * case.block[1] * case.block[2] <= 1024
    assert 0 <= case.shared_bytes <= 48 * 1024
    assert case.ulp is None or case.ulp >= 0
    assert case.rtol >= 0 and case.atol >= 0
    args = _args(case)
    for index, arg in enumerate(args):
        assert arg.kind in (*BUFFER_KINDS, "scalar", "struct"), (index, arg.kind)
        if arg.kind in BUFFER_KINDS:
            assert isinstance(arg.value, np.ndarray) and arg.value.flags.c_contiguous
            assert arg.value.size > 0
        else:
            assert isinstance(arg.value, np.generic) and arg.passed
        if arg.kind == "struct":
            for member, target in arg.pointers.items():
                assert member in arg.value.dtype.names
                assert args[target].kind in BUFFER_KINDS
        else:
            assert not arg.pointers
        if not arg.passed:
            assert any(target == index for a in args for target in a.pointers.values())
        if arg.bfloat16:
            assert arg.value.dtype == np.uint16


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_make_args_is_deterministic(case):
    first, second = _args(case), _args(case)
    assert [(a.kind, _bytes(a.value)) for a in first] == [(a.kind, _bytes(a.value))
                                                          for a in second]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference_describes_real_work(case):
    args = _args(case)
    before = [_bytes(a.value) for a in args]
    expected = case.reference(copy_args(args))
    assert [_bytes(a.value) for a in args] == before
    if not expected:
        assert "no buffer output" in case.notes, "a case without outputs must say why"
        return
    inputs = [a.value for a in args if a.kind == "in"]
    for index, want in expected.items():
        initial = args[index].value
        assert args[index].kind in ("out", "inout"), index
        assert want.dtype == initial.dtype and want.size == initial.size, index
        if (case.file, case.kernel, index) not in RESTORED_OUTPUTS:
            assert _bytes(want) != _bytes(initial), f"argument {index} is left as it was"
        if want.size > 1 and (case.file, case.kernel, index) not in CONSTANT_OUTPUTS:
            flat = want.ravel().view(f"u{want.itemsize}")
            assert (flat != flat[0]).any(), f"argument {index} is a constant"
        for source in inputs if (case.file, case.kernel, index) not in COPIED_OUTPUTS else []:
            assert _bytes(want) != _bytes(source), f"argument {index} just copies an input"


def _answer_with_reference(case, args):
    results = {i: a.value.copy() for i, a in enumerate(args) if a.kind in ("out", "inout")}
    results.update(case.reference(copy_args(args)))
    return results


def _spoil(value: np.ndarray, bfloat16: bool) -> np.ndarray:
    """The array with its first element made clearly wrong."""
    spoiled = value.copy().ravel()
    if bfloat16:
        spoiled[0] = 0x4120 if spoiled[0] != 0x4120 else 0x4130
    elif spoiled.dtype.kind == "f":
        v = spoiled[0]
        with np.errstate(over="ignore"):
            spoiled[0] = 0 if np.isnan(v) else (np.nan if np.isinf(v) else v * 2 + 1000)
    else:
        spoiled[0] ^= 0x55
    return spoiled


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_run_case_accepts_the_reference_and_rejects_a_wrong_element(case):
    run_case(case, _answer_with_reference)
    expected = case.reference(copy_args(_args(case)))
    if not expected:
        return
    index = min(expected)

    def wrong(case, args):
        results = _answer_with_reference(case, args)
        results[index] = _spoil(results[index], args[index].bfloat16)
        return results

    with pytest.raises(AssertionError) as failure:
        run_case(case, wrong)
    message = str(failure.value)
    assert case.kernel in message and f"argument {index}" in message
    if case.check is None:
        assert "first at [0]" in message


def test_compare_counts_float64_ulps_exactly():
    case = next(c for c in CASES if c.kernel == "daxpy")
    want = np.array([1.0, 0.47545798387126587, -3.0])
    have = np.nextafter(want, np.inf)
    args = [None, None, Arg("inout", want)]
    report = compare_outputs(case, args, {2: have}, {2: want})
    assert report.max_ulp == 1


def _exact(x) -> Fraction:
    return Fraction(float(x))


def _nearest(candidates, exact: Fraction):
    """The candidate nearest to `exact`, ties to the one with an even last bit."""
    return min(candidates, key=lambda v: (abs(_exact(v) - exact),
                                          int(np.atleast_1d(v).view(f"u{v.itemsize}")[0]) & 1))


def test_fma_models_round_once():
    rng = np.random.default_rng(7)
    a = rng.standard_normal(300) * np.exp2(rng.integers(-20, 20, 300))
    b = rng.standard_normal(300) * np.exp2(rng.integers(-20, 20, 300))
    c = -(a * b) * (1 + rng.standard_normal(300) * 2.0**-40)  # cancellation
    c[::2] = rng.standard_normal(150)
    for x, y, z, got in zip(a, b, c, fma64(a, b, c), strict=True):
        assert got == float(_exact(x) * _exact(y) + _exact(z))
    a32, b32, c32 = (v.astype(np.float32) for v in (a, b, c))
    for x, y, z, got in zip(a32, b32, c32, fma32(a32, b32, c32), strict=True):
        exact = _exact(x) * _exact(y) + _exact(z)
        near = np.float32(float(exact))
        neighbours = [np.nextafter(near, np.float32(-np.inf)), near,
                      np.nextafter(near, np.float32(np.inf))]
        assert got == _nearest(neighbours, exact)


def test_directed_rounding_brackets_the_value():
    rng = np.random.default_rng(8)
    v = rng.standard_normal(500) * np.exp2(rng.integers(-30, 30, 500))
    down, up = round_f64(v, np.float32, "rd"), round_f64(v, np.float32, "ru")
    toward_zero = round_f64(v, np.float32, "rz")
    assert (down.astype(np.float64) <= v).all() and (up.astype(np.float64) >= v).all()
    assert ((down == up) | (np.nextafter(down, np.float32(np.inf)) == up)).all()
    assert (np.abs(toward_zero) <= np.abs(v)).all()
