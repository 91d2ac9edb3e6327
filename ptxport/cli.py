"""The `ptxport` command.

Exit status: 0 on success; 1 when the input has errors (each printed to stderr as
`file:line:col: error: message`); 2 on usage errors (bad arguments, unreadable file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ptxport import __version__
from ptxport.compat import cli as compat_cli
from ptxport.errors import (
    BackendUnavailableError,
    CompileError,
    InternalError,
    InvalidValueError,
    PtxportError,
)

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptxport", description="Read PTX and run CUDA kernels on any processor.")
    parser.add_argument("--version", action="version", version=f"ptxport {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = commands.add_parser(
        "inspect", help="report the kernels, parameters, memory and instructions of a file",
        description="Report the kernels and device functions of a .ptx or .cu file: "
                    "parameters, registers, static memory, an instruction census, and the "
                    "instructions each target does not support yet.")
    inspect.add_argument("file", help="a .ptx file, or a .cu file (compiled with NVRTC)")
    inspect.add_argument("--json", action="store_true",
                         help="print the report as JSON (schema in docs/inspect.md)")
    inspect.add_argument("--arch", default="sm_90",
                         help="architecture NVRTC compiles .cu files for (default sm_90)")
    _add_cuda_options(inspect)
    inspect.add_argument("--ir", action="store_true", help="also print the IR")
    inspect.add_argument("--dump-after", metavar="PASS",
                         help="instead of the report, print each kernel's IR after the pass "
                              "PASS of ptxport/passes (if-convert, uniformity, segment, "
                              "lane-offsets, lane-forms, shared-bounds, inline, plan-waits) "
                              "and what the pass found")
    inspect.add_argument("--kernel", help="with --dump-after: this kernel only")
    devices = commands.add_parser(
        "devices", help="list the devices ptxport can run on, and why other backends cannot",
        description="List every device of every backend present, with its properties, and "
                    "for each backend that is absent, the reason.")
    devices.add_argument("--json", action="store_true", help="print the list as JSON")
    compile_ = commands.add_parser(
        "compile", help="compile a .ptx or .cu file for a target",
        description="Compile the kernels of a .ptx or .cu file for a target: 'cpu' (LLVM IR "
                    "with -o NAME.ll, or an object file for this host with -o NAME.o; one "
                    "kernel per file, so a file with several kernels gives NAME.KERNEL.ll "
                    "each unless --kernel picks one), 'nvptx:sm_XX' (PTX text) or 'spirv' (a "
                    "SPIR-V binary for OpenCL with -o NAME.spv, or LLVM IR with -o NAME.ll) or "
                    "'amdgpu:gfxNNNN' (an AMDGPU code object for HIP with -o NAME.hsaco, or "
                    "LLVM IR with -o NAME.ll; gfx90a, gfx942, gfx1030, gfx1100, gfx1201).")
    compile_.add_argument("file", help="a .ptx file, or a .cu file (compiled with NVRTC)")
    compile_.add_argument("--target", required=True,
                          help="cpu, nvptx:sm_XX (e.g. nvptx:sm_90), amdgpu:gfxNNNN, spirv")
    compile_.add_argument("-o", "--output", required=True, help="the file to write")
    compile_.add_argument("--kernel", help="the one kernel to compile (cpu target)")
    compile_.add_argument("--arch", help="architecture NVRTC compiles .cu files for "
                                         "(default: the nvptx target's, else sm_90)")
    _add_cuda_options(compile_)
    compat_cli.add_commands(commands)
    return parser


def _add_cuda_options(command: argparse.ArgumentParser) -> None:
    """The NVRTC flags a .cu input takes, as nvcc spells them."""
    group = command.add_argument_group(".cu input (NVRTC)")
    group.add_argument("-I", "--include-path", action="append", default=[], metavar="DIR",
                       help="search DIR for #include files (repeatable)")
    group.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]",
                       help="define a preprocessor macro (repeatable)")
    group.add_argument("--std", help="the C++ dialect, e.g. c++17 (default: NVRTC's)")


def _nvrtc_options(args, arch: str):
    """NvrtcOptions for a .cu input from the command's flags."""
    from ptxport.frontends.nvrtc import NvrtcOptions

    defines = {}
    for text in args.define:
        name, equals, value = text.partition("=")
        defines[name] = value if equals else None
    return NvrtcOptions(arch=arch, std=args.std, defines=defines,
                        include_paths=[str(Path(p).resolve()) for p in args.include_path])


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:
        # The reader went away (`ptxport inspect --json | head`): not an error of ours. Python
        # would complain again when it flushes stdout at exit, so point stdout at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except InternalError as e:
        print(f"ptxport: internal error: {e}", file=sys.stderr)
        return 1


def _run(args) -> int:
    if args.command == "inspect":
        return _inspect(args)
    if args.command == "devices":
        return _devices(args)
    if args.command == "compile":
        return _compile(args)
    if args.command == "run":
        return compat_cli.run_command(args)
    if args.command == "env":
        return compat_cli.env_command(args)
    return 2


def _devices(args) -> int:
    from ptxport.runtime import system

    devices = []
    for dev in system.devices:
        p = dev.properties
        devices.append({
            "device": str(dev), "name": dev.name,
            "multiprocessors": p.multiprocessor_count, "warp_size": p.warp_size,
            "max_threads_per_block": p.max_threads_per_block,
            "shared_memory_per_block": p.max_shared_memory_per_block,
            # whether kernels may find device addresses anywhere (in structs, in device
            # memory) or only in pointer parameters (OpenCL devices without SVM)
            "unified_addressing": p.unified_addressing,
            **_opencl_bounds_checks(dev),
        })
    absent = {name: why for name, why in system.backends.items() if why}
    if args.json:
        print(json.dumps({"devices": devices, "absent_backends": absent}, indent=2))
        return 0
    for d in devices:
        print(f"{d['device']}: {d['name']}, {d['multiprocessors']} cores, warp size "
              f"{d['warp_size']}, {d['max_threads_per_block']} threads per block, "
              f"{d['shared_memory_per_block'] // 1024} KiB shared memory per block"
              + ("" if d["unified_addressing"] else
                 "; device addresses only in pointer parameters (no unified addressing)"))
        if "bounds_checks" in d:
            print(f"{d['device']}: bounds checks: {d['bounds_checks']}")
    for name, why in absent.items():
        print(f"{name}: absent: {why}")
    for name, why in _opencl_devices_skipped():
        print(f"opencl: {name}: not used: {why}")
    return 0


def _opencl_bounds_checks(dev) -> dict[str, str]:
    """{"bounds_checks": what an opencl device checks kernels' accesses against}; {} for
    other devices."""
    if not str(dev).startswith("opencl:"):
        return {}
    from ptxport.runtime.backends import get

    return {"bounds_checks": get("opencl").bounds_checks(dev.device_id)}


def _opencl_devices_skipped() -> list[tuple[str, str]]:
    """OpenCL devices the opencl backend leaves out (those without SPIR-V), with the reason."""
    from ptxport.runtime.backends import availability

    if not availability("opencl")[0]:
        return []
    from ptxport.runtime.backends.opencl import skipped_devices

    return skipped_devices()


def _inspect(args) -> int:
    from ptxport.inspection import inspect_module, render_text

    path = Path(args.file)
    loaded = _read_module(path, _nvrtc_options(args, args.arch))
    if isinstance(loaded, int):
        return loaded
    module, source_kind = loaded
    if args.dump_after:
        return _dump_after(module, args.dump_after, args.kernel)
    report = inspect_module(module, source_kind)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        sys.stdout.write(render_text(report))
    if args.ir:
        from ptxport.ir.printer import print_ir

        sys.stdout.write(print_ir(module))
    return 0


def _dump_after(module, name: str, only: str | None) -> int:
    from ptxport.passes import dump, run_until

    kernels = [f.name for f in module.kernels if only is None or f.name == only]
    try:
        if not kernels:
            raise InvalidValueError(f"no kernel named {only!r} in the module")
        for kernel in kernels:
            sys.stdout.write(f"// kernel {kernel}\n" + dump(run_until(module, kernel, name),
                                                             name))
    except PtxportError as e:
        print(f"ptxport: {e}", file=sys.stderr)
        return 2
    return 0


def _target(text: str) -> tuple[str, str | None] | str:
    """(family, architecture) of a --target, or the usage error to print."""
    from ptxport.codegen.targets.nvptx import ARCHS

    family, _, arch = text.partition(":")
    if family in ("cpu", "spirv") and not arch:
        return family, None
    if family == "nvptx":
        if arch in ARCHS:
            return "nvptx", arch
        return (f"nvptx needs one of the architectures {', '.join(ARCHS)} "
                f"(e.g. --target nvptx:sm_90), not '{arch}'")
    if family == "amdgpu":
        from ptxport.codegen.targets.amdgpu import CHIPS

        if arch in CHIPS:
            return "amdgpu", arch
        return (f"amdgpu needs one of the chips {', '.join(CHIPS)} "
                f"(e.g. --target amdgpu:gfx1100), not '{arch}'")
    return f"unknown target '{text}': the targets are cpu, nvptx:sm_XX, amdgpu:gfxNNNN, spirv"


def _compile(args) -> int:
    from ptxport.errors import UnsupportedFeatureError

    target = _target(args.target)
    if isinstance(target, str):
        print(f"ptxport: error: {target}", file=sys.stderr)
        return 2
    family, arch = target
    path, output = Path(args.file), Path(args.output)
    if family == "cpu" and output.suffix not in (".ll", ".o"):
        print(f"ptxport: error: for the cpu target, -o names a .ll (LLVM IR) or .o (object "
              f"file) output, not '{output}'", file=sys.stderr)
        return 2
    # NVRTC's architecture: the nvptx target's own, else sm_90 (an amdgpu chip is no NVRTC
    # architecture)
    nvrtc_arch = args.arch or (arch if family == "nvptx" else "sm_90")
    loaded = _read_module(path, _nvrtc_options(args, nvrtc_arch))
    if isinstance(loaded, int):
        return loaded
    module = loaded[0]
    try:
        from ptxport.codegen.compile import sampler_lowered

        module = sampler_lowered(module, family)
        if family == "nvptx":
            from ptxport.codegen.targets.nvptx import compile_module

            output.write_text(compile_module(module, arch))
            return 0
        if family == "spirv":
            return _compile_spirv(module, output)
        if family == "amdgpu":
            return _compile_amdgpu(module, arch, output)
        return _compile_cpu(module, args.kernel, output)
    except UnsupportedFeatureError as e:
        _report_unsupported(path, family, module, e)
        return 1
    except CompileError as e:
        print(f"{path}: error: {e}", file=sys.stderr)
        return 1


def _compile_amdgpu(module, chip: str, output: Path) -> int:
    """One AMDGPU code object (.hsaco) or its LLVM IR (.ll) with every kernel of the file."""
    from ptxport.codegen.targets import amdgpu

    if output.suffix == ".ll":
        output.write_text(amdgpu.compile_llvm_ir(module, chip))
    else:
        output.write_bytes(amdgpu.compile_module(module, chip))
    return 0


def _compile_spirv(module, output: Path) -> int:
    """One SPIR-V module (.spv) or its LLVM IR (.ll) with every kernel of the file."""
    from ptxport.codegen.targets import spirv

    if output.suffix == ".ll":
        output.write_text(str(spirv.build_llvm(module)[0]))
    else:
        output.write_bytes(spirv.compile_module(module)[0])
    return 0


def _compile_cpu(module, kernel: str | None, output: Path) -> int:
    """One LLVM IR or object file per kernel (the CPU target compiles kernels one by one)."""
    import llvmlite.binding as llvm

    from ptxport.codegen.targets.cpu.compile import emit_object
    from ptxport.codegen.targets.cpu.module import build_llvm

    names = [f.name for f in module.kernels]
    if kernel is not None and kernel not in names:
        print(f"ptxport: error: no kernel '{kernel}' (kernels: {', '.join(names) or 'none'})",
              file=sys.stderr)
        return 2
    if kernel is None and not names:
        print("ptxport: error: the cpu target compiles kernels, and this file has none",
              file=sys.stderr)
        return 1
    chosen = [kernel] if kernel is not None else names
    for name in chosen:
        path = output if len(chosen) == 1 else output.with_name(
            f"{output.stem}.{name}{output.suffix}")
        if output.suffix == ".ll":
            path.write_text(str(build_llvm(module, name)[0]))
        else:
            path.write_bytes(emit_object(module, name, llvm.get_process_triple(),
                                         llvm.get_host_cpu_name()))
        if len(chosen) > 1:
            print(path)
    return 0


def _read_module(path: Path, options):
    """(the verified IR, "ptx" or "cuda") of a .ptx or .cu file (NvrtcOptions `options` for
    a .cu file), or the exit status after printing why not."""
    from ptxport.inspection import load

    if not path.is_file():
        print(f"ptxport: error: cannot read '{path}': no such file", file=sys.stderr)
        return 2
    if path.suffix not in (".ptx", ".cu"):
        print(f"ptxport: error: '{path}' is neither a .ptx nor a .cu file", file=sys.stderr)
        return 2
    try:
        return load(path, options=options)
    except BackendUnavailableError as e:
        print(f"ptxport: error: {e}", file=sys.stderr)
        return 2
    except CompileError as e:
        print(f"{path}: error: {e}", file=sys.stderr)
        return 1
    except PtxportError as e:
        diagnostics = getattr(e, "diagnostics", None)
        lines = [str(d) for d in diagnostics] if diagnostics else [f"{path}: error: {e}"]
        print("\n".join(lines), file=sys.stderr)
        return 1
    except UnicodeDecodeError as e:
        print(f"{path}: error: not a text file ({e.reason} at byte {e.start})", file=sys.stderr)
        return 1


def _report_unsupported(path: Path, target: str, module, error) -> None:
    """Every instruction `target` cannot compile, as `file:line:col: error: ...`, in order;
    `error` (the first problem compiling met) where it is no instruction's (a variable's)."""
    from ptxport.codegen import support

    lines = []
    reasons = support.unsupported(target, module)
    for f in module.functions.values():
        for inst in f.instructions():
            reason = reasons.get(id(inst))
            if reason is not None:
                where = _place(module.location(inst.pos) or path, module.source_line(inst.pos))
                lines.append(f"{where}: error: '{inst.spec.text}' is not supported on target "
                             f"{target}: {reason}")
    if not lines:
        lines.append(f"{_place(error.location or path, error.source)}: error: "
                     f"'{error.feature}' is not supported on target {error.target}: "
                     f"{error.reason}")
    print("\n".join(lines), file=sys.stderr)


def _place(ptx, source: tuple[str, int] | None) -> str:
    """The user's `file:line` then the PTX place, where the PTX has line information (as
    runtime errors name them); else the PTX place."""
    return f"{source[0]}:{source[1]} (PTX {ptx})" if source is not None else str(ptx)


if __name__ == "__main__":
    sys.exit(main())
