"""benchmarks/corpus_coverage.py links a file's -rdc units with those of its directory that
define its externs (as `ptxport run` links a program's units), and only those."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import programs_harness as harness
import pytest

try:
    harness.toolkit_root()
except harness.ToolkitMissingError as e:
    pytest.skip(f"cannot build .cu files here: {e}", allow_module_level=True)

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "corpus_coverage.py"
_SPEC = importlib.util.spec_from_file_location("corpus_coverage", _PATH)
coverage = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("corpus_coverage", coverage)
_SPEC.loader.exec_module(coverage)

MAIN = """
extern __device__ int twice(int x);      // defined in twice.cu
extern __device__ int g_offset;          // defined in twice.cu
__global__ void apply(int *x) { x[threadIdx.x] = twice(x[threadIdx.x]) + g_offset; }
"""
TWICE = """
__device__ int g_offset = 3;
__device__ int twice(int x) { return 2 * x; }
__global__ void other_kernel(int *x) { x[0] = twice(1); }
"""
LONELY = """
extern __device__ int nowhere(int x);
__global__ void lonely(int *x) { x[0] = nowhere(x[0]); }
"""


def test_source_names_of_mangled_symbols():
    assert coverage._source_names("_Z5twicei") == {"twice"}
    assert coverage._source_names("_ZN2ns6helperEv") == {"ns", "helper"}
    assert coverage._source_names("g_offset") == {"g_offset"}


def test_externs_resolve_against_the_directory_units(tmp_path):
    from ptxport.codegen.compile import compile_for_target
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    (tmp_path / "main.cu").write_text(MAIN)
    (tmp_path / "twice.cu").write_text(TWICE)
    (tmp_path / "unrelated.cu").write_text("#error not a unit of this program\n")
    text, kernels = coverage.linked_ptx(tmp_path / "main.cu", [], 300.0)
    assert kernels == {"_Z5applyPi"}             # twice.cu's kernel counts in its own file
    module = build(parse(text, "main.cu"))
    assert module.functions["_Z5twicei"].blocks, "the definition was linked in"
    kernel = module.functions["_Z5applyPi"]
    compile_for_target(coverage.kernel_module(module, kernel), "nvptx:sm_80")


def test_a_really_missing_extern_stays_a_declaration(tmp_path):
    (tmp_path / "lonely.cu").write_text(LONELY)
    (tmp_path / "twice.cu").write_text(TWICE)
    text, kernels = coverage.linked_ptx(tmp_path / "lonely.cu", [], 300.0)
    assert kernels == {"_Z6lonelyPi"}
    assert "_Z5twicei" not in text and ".extern .func" in text
