"""ProgramOptions: cuda.core's compile options, and what each becomes for NVRTC.

Every field of cuda.core's ProgramOptions is here with its name and meaning, so that a
cuda.core script runs with only its import changed. Most become the NVRTC flag cuda.core
passes (the PTX they change is what ptxport then reads). A few make no sense without the
linker or the ptxas step ptxport does not have, or belong to NVVM, which ptxport does not
drive; setting one of those raises InvalidValueError saying why, instead of being ignored.
docs/cuda-core-compat.md lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from ptxport.errors import InvalidValueError

__all__ = ["ProgramOptions", "check_supported", "nvrtc_options"]


@dataclass
class ProgramOptions:
    """How a Program is compiled; the fields are cuda.core's, with NVRTC's meaning.

    ptxport differs from cuda.core in two defaults: `lineinfo` is on (errors name the .cu
    line; it costs nothing at run time), and `arch` None takes the current device's
    compute capability (the CPU presents 9.0). `no_cache` also bypasses ptxport's own
    on-disk PTX cache. The fields most used are below; the others (ftz, prec_div,
    prec_sqrt, fma, max_register_count, undefine_macro, pre_include, diag_*, ...) are
    NVRTC's flags of the same names, see NVRTC's documentation.

    Parameters
    ----------
    name : str
        The program's name: the file name in diagnostics (PTX errors, NVRTC's log).
    arch : str or None
        The architecture NVRTC compiles C++ for ("sm_90", "compute_90", or "90"); None
        takes the current device's (Device().arch). Ignored for PTX.
    std : str or None
        The C++ dialect ("c++17", "c++20"); None keeps NVRTC's default (C++17).
    define_macro : str, (str, str) or a list of them
        Macros: "NAME", "NAME=VALUE" or ("NAME", "VALUE").
    include_path : str or list of str
        Directories searched for #include files, before CUDA's and CCCL's.
    use_fast_math : bool
        NVRTC's --use_fast_math (approximate division, square root and transcendentals,
        denormals flushed to zero).
    lineinfo : bool
        NVRTC's -lineinfo: `.loc` directives name the source line of each instruction.
    debug : bool
        NVRTC's -G: full debug information and no optimisation.
    extensible_whole_program : bool
        NVRTC's -ewp: one whole program that may call CUDA's device runtime, which
        dynamic parallelism (kernels launching kernels) needs; ptxport provides the device
        runtime (on the cpu device: docs/dynamic-parallelism.md).

    Refused when set (InvalidValueError): relocatable_device_code=True,
    link_time_optimization, gen_opt_lto (they need a device linker), ptxas_options (no
    ptxas runs), fdevice_syntax_only (gives no code), extra_sources, use_libdevice,
    numba_debug (NVVM's).
    """

    name: str = "default_program"
    arch: str | None = None
    relocatable_device_code: bool | None = None
    extensible_whole_program: bool | None = None
    debug: bool | None = False
    lineinfo: bool | None = True
    device_code_optimize: bool | None = None
    ptxas_options: str | list[str] | tuple[str, ...] | None = None
    max_register_count: int | None = None
    ftz: bool | None = None
    prec_sqrt: bool | None = None
    prec_div: bool | None = None
    fma: bool | None = None
    use_fast_math: bool | None = False
    extra_device_vectorization: bool | None = None
    link_time_optimization: bool | None = None
    gen_opt_lto: bool | None = None
    define_macro: str | tuple[str, str] | list[str | tuple[str, str]] | None = None
    undefine_macro: str | list[str] | tuple[str, ...] | None = None
    include_path: str | list[str] | tuple[str, ...] | None = None
    pre_include: str | list[str] | tuple[str, ...] | None = None
    no_source_include: bool | None = None
    std: str | None = None
    builtin_move_forward: bool | None = None
    builtin_initializer_list: bool | None = None
    disable_warnings: bool | None = None
    restrict: bool | None = None
    device_as_default_execution_space: bool | None = None
    device_int128: bool | None = None
    optimization_info: str | None = None
    no_display_error_number: bool | None = None
    diag_error: int | list[int] | tuple[int, ...] | None = None
    diag_suppress: int | list[int] | tuple[int, ...] | None = None
    diag_warn: int | list[int] | tuple[int, ...] | None = None
    brief_diagnostics: bool | None = None
    time: str | None = None
    split_compile: int | None = None
    fdevice_syntax_only: bool | None = None
    minimal: bool | None = None
    no_cache: bool | None = None
    fdevice_time_trace: str | None = None
    device_float128: bool | None = None
    frandom_seed: str | None = None
    ofast_compile: str | None = None
    pch: bool | None = None
    create_pch: str | None = None
    use_pch: str | None = None
    pch_dir: str | None = None
    pch_verbose: bool | None = None
    pch_messages: bool | None = None
    instantiate_templates_in_pch: bool | None = None
    extra_sources: list | tuple | None = None
    use_libdevice: bool | None = None
    numba_debug: bool | None = None


# Fields that cannot be honoured, and why: each refused whenever it is set to anything but
# None or False (relocatable_device_code=False is NVRTC's default, so it is accepted).
_REFUSED = {
    "relocatable_device_code": "separately compiled device code needs a device linker, and "
                               "ptxport reads one whole PTX module per Program",
    "link_time_optimization": "LTO IR is for nvJitLink; ptxport reads PTX",
    "gen_opt_lto": "LTO IR is for nvJitLink; ptxport reads PTX",
    "ptxas_options": "ptxport does not run ptxas: its code generators take the PTX",
    "fdevice_syntax_only": "it stops NVRTC before there is any PTX to run",
    "extra_sources": "it belongs to the NVVM backend (code_type 'nvvm'), which ptxport does "
                     "not drive",
    "use_libdevice": "it belongs to the NVVM backend (code_type 'nvvm'), which ptxport does "
                     "not drive",
    "numba_debug": "it belongs to numba-cuda's NVVM pipeline, which ptxport does not drive",
}

# Flags written when the field is True.
_SWITCHES = {
    "device_code_optimize": "--dopt=on",
    "extra_device_vectorization": "--extra-device-vectorization",
    "no_source_include": "--no-source-include",
    "disable_warnings": "--disable-warnings",
    "restrict": "--restrict",
    "device_as_default_execution_space": "--device-as-default-execution-space",
    "device_int128": "--device-int128",
    "device_float128": "--device-float128",
    "no_display_error_number": "--no-display-error-number",
    "minimal": "--minimal",
    "no_cache": "--no-cache",
    "pch": "--pch",
    # a whole program whose only external references are CUDA's device runtime, which
    # ptxport provides (dynamic parallelism: docs/dynamic-parallelism.md)
    "extensible_whole_program": "--extensible-whole-program",
}

# Flags that take the field's value (booleans as NVRTC's true/false); list-valued fields
# give one flag per item.
_VALUED = {
    "relocatable_device_code": "--relocatable-device-code",
    "max_register_count": "--maxrregcount",
    "ftz": "--ftz",
    "prec_sqrt": "--prec-sqrt",
    "prec_div": "--prec-div",
    "fma": "--fmad",
    "undefine_macro": "--undefine-macro",
    "pre_include": "--pre-include",
    "builtin_move_forward": "--builtin-move-forward",
    "builtin_initializer_list": "--builtin-initializer-list",
    "optimization_info": "--optimization-info",
    "diag_error": "--diag-error",
    "diag_suppress": "--diag-suppress",
    "diag_warn": "--diag-warn",
    "brief_diagnostics": "--brief-diagnostics",
    "time": "--time",
    "split_compile": "--split-compile",
    "fdevice_time_trace": "--fdevice-time-trace",
    "frandom_seed": "--frandom-seed",
    "ofast_compile": "--Ofast-compile",
    "create_pch": "--create-pch",
    "use_pch": "--use-pch",
    "pch_dir": "--pch-dir",
    "pch_verbose": "--pch-verbose",
    "pch_messages": "--pch-messages",
    "instantiate_templates_in_pch": "--instantiate-templates-in-pch",
}


def check_supported(options: ProgramOptions) -> None:
    """Raise InvalidValueError for a set field ptxport cannot honour (see _REFUSED)."""
    if not isinstance(options, ProgramOptions):
        raise InvalidValueError(
            f"options= takes a ProgramOptions, not {type(options).__name__}")
    for name, why in _REFUSED.items():
        value = getattr(options, name)
        if value is not None and value is not False:
            raise InvalidValueError(
                f"ProgramOptions({name}={value!r}) is not supported by ptxport: {why}; "
                f"leave {name} unset")


def _value(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _extra_flags(options: ProgramOptions) -> list[str]:
    """The NVRTC flags of every field NvrtcOptions has no field for, in field order."""
    flags = []
    for f in fields(options):
        value = getattr(options, f.name)
        if value is None:
            continue
        if f.name in _SWITCHES and value:
            flags.append(_SWITCHES[f.name])
        elif f.name in _VALUED:
            items = value if isinstance(value, (list, tuple)) else [value]
            flags += [f"{_VALUED[f.name]}={_value(item)}" for item in items]
    return flags


def _defines(define_macro) -> dict[str, str | None]:
    if define_macro is None:
        return {}
    if isinstance(define_macro, str) or (
            isinstance(define_macro, tuple) and len(define_macro) == 2
            and all(isinstance(part, str) for part in define_macro)):
        define_macro = [define_macro]
    defines: dict[str, str | None] = {}
    for macro in define_macro:
        if isinstance(macro, tuple) and len(macro) == 2:
            name, value = macro
        elif isinstance(macro, str):
            name, equals, value = macro.partition("=")
            value = value if equals else None
        else:
            raise InvalidValueError(
                f"define_macro takes 'NAME', 'NAME=VALUE' or ('NAME', 'VALUE'), not {macro!r}")
        defines[name] = value
    return defines


def _arch(arch: str | None, current_arch: Callable[[], str]) -> str:
    if arch is None:
        return f"sm_{current_arch()}"
    return f"sm_{arch}" if arch.isdigit() else arch


def nvrtc_options(options: ProgramOptions, current_arch: Callable[[], str]):
    """The NvrtcOptions for `options`; `current_arch` gives the digits of the current
    device's compute capability ("90") when `arch` is None."""
    from ptxport.frontends.nvrtc import NvrtcOptions

    check_supported(options)
    include = options.include_path
    arch = _arch(options.arch, current_arch)
    if options.extensible_whole_program and arch.startswith("sm_"):
        # a real architecture makes NVRTC assemble the PTX too, and ptxas cannot resolve the
        # device runtime's functions (a device linker adds them); ptxport wants the PTX only
        arch = "compute_" + arch[len("sm_"):]
    return NvrtcOptions(
        arch=arch,
        std=options.std,
        defines=_defines(options.define_macro),
        include_paths=[include] if isinstance(include, str) else list(include or ()),
        fast_math=bool(options.use_fast_math),
        lineinfo=bool(options.lineinfo),
        debug=bool(options.debug),
        extra=_extra_flags(options),
    )
