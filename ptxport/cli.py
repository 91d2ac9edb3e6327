"""The `ptxport` command.

Exit status: 0 on success; 1 when the input has errors (each printed to stderr as
`file:line:col: error: message`); 2 on usage errors (bad arguments, unreadable file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ptxport import __version__
from ptxport.errors import BackendUnavailableError, CompileError, PtxportError

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
    inspect.add_argument("--ir", action="store_true", help="also print the IR")
    devices = commands.add_parser(
        "devices", help="list the devices ptxport can run on, and why other backends cannot",
        description="List every device of every backend present, with its properties, and "
                    "for each backend that is absent, the reason.")
    devices.add_argument("--json", action="store_true", help="print the list as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "inspect":
        return _inspect(args)
    if args.command == "devices":
        return _devices(args)
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
        })
    absent = {name: why for name, why in system.backends.items() if why}
    if args.json:
        print(json.dumps({"devices": devices, "absent_backends": absent}, indent=2))
        return 0
    for d in devices:
        print(f"{d['device']}: {d['name']}, {d['multiprocessors']} cores, warp size "
              f"{d['warp_size']}, {d['max_threads_per_block']} threads per block, "
              f"{d['shared_memory_per_block'] // 1024} KiB shared memory per block")
    for name, why in absent.items():
        print(f"{name}: absent: {why}")
    return 0


def _inspect(args) -> int:
    from ptxport.inspection import inspect_module, load, render_text

    path = Path(args.file)
    if not path.is_file():
        print(f"ptxport: error: cannot read '{path}': no such file", file=sys.stderr)
        return 2
    if path.suffix not in (".ptx", ".cu"):
        print(f"ptxport: error: '{path}' is neither a .ptx nor a .cu file", file=sys.stderr)
        return 2
    try:
        module, source_kind = load(path, arch=args.arch)
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
    report = inspect_module(module, source_kind)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        sys.stdout.write(render_text(report))
    if args.ir:
        from ptxport.ir.printer import print_ir

        sys.stdout.write(print_ir(module))
    return 0


if __name__ == "__main__":
    sys.exit(main())
