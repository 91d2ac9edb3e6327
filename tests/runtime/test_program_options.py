"""ProgramOptions: cuda.core's fields, each an NVRTC flag or refused with the reason."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from ptxport import Program, ProgramOptions
from ptxport.errors import InvalidValueError
from ptxport.frontends import nvrtc
from ptxport.runtime.program_options import nvrtc_options

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed")

# cuda.core's ProgramOptions fields (cuda_core/cuda/core/_program.pyx, 2026).
CUDA_CORE_FIELDS = {
    "name", "arch", "relocatable_device_code", "extensible_whole_program", "debug",
    "lineinfo", "device_code_optimize", "ptxas_options", "max_register_count", "ftz",
    "prec_sqrt", "prec_div", "fma", "use_fast_math", "extra_device_vectorization",
    "link_time_optimization", "gen_opt_lto", "define_macro", "undefine_macro",
    "include_path", "pre_include", "no_source_include", "std", "builtin_move_forward",
    "builtin_initializer_list", "disable_warnings", "restrict",
    "device_as_default_execution_space", "device_int128", "optimization_info",
    "no_display_error_number", "diag_error", "diag_suppress", "diag_warn",
    "brief_diagnostics", "time", "split_compile", "fdevice_syntax_only", "minimal",
    "no_cache", "fdevice_time_trace", "device_float128", "frandom_seed", "ofast_compile",
    "pch", "create_pch", "use_pch", "pch_dir", "pch_verbose", "pch_messages",
    "instantiate_templates_in_pch", "extra_sources", "use_libdevice", "numba_debug",
}

REFUSED = {
    "relocatable_device_code": True,
    "link_time_optimization": True, "gen_opt_lto": True, "ptxas_options": "-v",
    "fdevice_syntax_only": True, "extra_sources": [("a", "b")], "use_libdevice": True,
    "numba_debug": True,
}

DIVIDE = textwrap.dedent("""\
    extern "C" __global__ void divide(float* x)
    {
        int unused_here = 0;
        x[0] = x[1] / x[2] + x[3] * x[4];
    }
    """)


def _sm90() -> str:
    return "90"


def test_every_cuda_core_field_exists():
    assert {f.name for f in dataclasses.fields(ProgramOptions)} == CUDA_CORE_FIELDS


def test_fields_become_nvrtcs_flags():
    options = ProgramOptions(
        ftz=True, prec_div=False, prec_sqrt=True, fma=False, max_register_count=32,
        undefine_macro=["A", "B"], pre_include="pre.h", diag_suppress=[177, 550],
        restrict=True, relocatable_device_code=False, device_code_optimize=True,
        builtin_move_forward=False, ofast_compile="min")
    extra = nvrtc_options(options, _sm90).extra
    assert extra == [
        "--relocatable-device-code=false", "--dopt=on", "--maxrregcount=32", "--ftz=true",
        "--prec-sqrt=true", "--prec-div=false", "--fmad=false", "--undefine-macro=A",
        "--undefine-macro=B", "--pre-include=pre.h", "--builtin-move-forward=false",
        "--restrict", "--diag-suppress=177", "--diag-suppress=550", "--Ofast-compile=min"]


def test_the_common_fields_become_nvrtc_options():
    options = ProgramOptions(arch="80", std="c++20", define_macro=["N=4", ("M", "2"), "F"],
                             include_path="inc", use_fast_math=True, debug=True)
    converted = nvrtc_options(options, _sm90)
    assert converted.arch == "sm_80" and converted.std == "c++20"
    assert converted.defines == {"N": "4", "M": "2", "F": None}
    assert converted.include_paths == ["inc"] and converted.fast_math and converted.debug
    assert converted.extra == []
    assert nvrtc_options(ProgramOptions(), _sm90).arch == "sm_90"
    assert nvrtc_options(ProgramOptions(arch="compute_90"), _sm90).arch == "compute_90"


def test_lineinfo_is_on_unless_turned_off():
    assert nvrtc_options(ProgramOptions(), _sm90).lineinfo
    assert not nvrtc_options(ProgramOptions(lineinfo=False), _sm90).lineinfo


@pytest.mark.parametrize("field", sorted(REFUSED))
def test_fields_ptxport_cannot_honour_are_refused_by_name(field):
    with pytest.raises(InvalidValueError, match=rf"ProgramOptions\({field}=.*leave {field} unset"):
        Program("", "c++", ProgramOptions(**{field: REFUSED[field]}))


def test_options_must_be_program_options():
    with pytest.raises(InvalidValueError, match="ProgramOptions"):
        Program("", "c++", {"std": "c++17"})


@needs_nvrtc
def test_nvrtc_takes_the_flags_and_they_change_the_ptx(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))

    def ptx(**fields) -> str:
        return Program(DIVIDE, "c++", ProgramOptions(arch="sm_80", **fields)).compile("ptx").code

    plain = ptx()
    assert "div.rn.f32" in plain and "fma.rn.f32" in plain
    assert "div.rn.ftz.f32" in ptx(ftz=True)
    assert "fma.rn" not in ptx(fma=False)
    assert "div.rn.f32" not in ptx(prec_div=False)
    # NVRTC refuses flags it does not know: these spellings must be its own.
    assert ".entry divide" in ptx(max_register_count=32, split_compile=1, minimal=True,
                                  diag_warn=177, brief_diagnostics=True)


@needs_nvrtc
def test_no_cache_bypasses_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    Program(DIVIDE, "c++", ProgramOptions(arch="sm_80", no_cache=True)).compile()
    assert not list(Path(tmp_path).rglob("*.ptx"))
    Program(DIVIDE, "c++", ProgramOptions(arch="sm_80")).compile()
    assert len(list(Path(tmp_path).rglob("*.ptx"))) == 1


def test_extensible_whole_program_asks_nvrtc_for_ptx_only():
    # (dynamic parallelism: ptxas could not resolve the device runtime a real arch would need)
    converted = nvrtc_options(ProgramOptions(extensible_whole_program=True), _sm90)
    assert converted.arch == "compute_90"
    assert converted.extra == ["--extensible-whole-program"]
    converted = nvrtc_options(ProgramOptions(extensible_whole_program=True, arch="compute_80"),
                              _sm90)
    assert converted.arch == "compute_80"
