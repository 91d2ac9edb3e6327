"""The benchmark kernels' PTX from two NVRTC releases, and the instructions a block of each.

The GPU host where issue 15's figures are measured compiles with its own NVRTC (13.0.88 in
session 13) and this machine's venv with another (13.5); their PTX differs in ways the CPU
target's fast paths care about (13.0 widens 32-bit indices into 64-bit shared addresses), so
a count made here from one release's PTX may not be what the host runs.

    python tools/nvrtc_versions.py --nvrtc /tmp/nvrtc130/x/nvidia/cu13/lib/libnvrtc.so.13
                                   [--kernels gemm,stencil] [--out build/nvrtc] [--no-trace]

compiles each cpu_kernels.py case's source (tests/kernels/<source>.cu) the way the benchmark
does (Program(source, code_type="c++").compile("native") with the CPU device current: the
same flags and architecture), once with the venv's NVRTC and once with the libnvrtc given,
writes both PTX files under --out (<case>.<release>.ptx), and, unless --no-trace, runs
tools/trace_blocks.py CASE --ptx FILE on each and prints the instructions of the traced block
(trace_blocks' middle call at its default size, or --size) for both, their ratio, and the
LLVM blocks whose counts differ most. The other libnvrtc is loaded with ctypes in a child
process (one libnvrtc a process; its builtins library must lie beside it, as in NVIDIA's
wheels), each with an empty PTX cache.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tools" / "trace_blocks.py"


class _Result(int):
    """An nvrtcResult as cuda.bindings gives it: comparable, with a name."""

    @property
    def name(self) -> str:
        return f"nvrtcResult {int(self)}"


def _ctypes_nvrtc(library: Path) -> SimpleNamespace:
    """The part of cuda.bindings.nvrtc that ptxport.frontends.nvrtc calls, over `library`."""
    for builtins in sorted(library.parent.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtins.name:   # (libnvrtc dlopens it by name: load it first)
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(library))
    handle = ctypes.c_void_p
    size = ctypes.c_size_t

    def version():
        major, minor = ctypes.c_int(), ctypes.c_int()
        return _Result(lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))), \
            major.value, minor.value

    def create(source, name, _headers, _a, _b):
        program = handle()
        result = lib.nvrtcCreateProgram(ctypes.byref(program), source, name, 0, None, None)
        return _Result(result), program

    def compile_program(program, count, flags):
        return (_Result(lib.nvrtcCompileProgram(program, count,
                                                (ctypes.c_char_p * count)(*flags))),)

    def sized(function):
        def get(program):
            value = size()
            return _Result(function(program, ctypes.byref(value))), value.value
        return get

    def filled(function):
        def get(program, buffer):
            raw = (ctypes.c_char * len(buffer)).from_buffer(buffer) if buffer else None
            return (_Result(function(program, raw)),)
        return get

    def lowered(program, expression):
        symbol = ctypes.c_char_p()
        return _Result(lib.nvrtcGetLoweredName(program, expression, ctypes.byref(symbol))), \
            symbol.value or b""

    def destroy(program):
        return (_Result(lib.nvrtcDestroyProgram(ctypes.byref(program))),)

    return SimpleNamespace(
        nvrtcResult=SimpleNamespace(NVRTC_SUCCESS=0), nvrtcVersion=version,
        nvrtcCreateProgram=create, nvrtcCompileProgram=compile_program,
        nvrtcAddNameExpression=lambda p, e: (_Result(lib.nvrtcAddNameExpression(p, e)),),
        nvrtcGetProgramLogSize=sized(lib.nvrtcGetProgramLogSize),
        nvrtcGetProgramLog=filled(lib.nvrtcGetProgramLog),
        nvrtcGetPTXSize=sized(lib.nvrtcGetPTXSize), nvrtcGetPTX=filled(lib.nvrtcGetPTX),
        nvrtcGetLoweredName=lowered, nvrtcDestroyProgram=destroy)


def _write_ptx(library: str, cases: list[str], out: Path) -> str:
    """In a child process: compile each case's source with `library` (the venv's NVRTC when
    empty) and write <case>.<release>.ptx under `out`; returns the release."""
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import cpu_kernels as ck

    from ptxport import Device, Program
    from ptxport.frontends import nvrtc as front

    if library:
        shim = _ctypes_nvrtc(Path(library))
        front._load_nvrtc = lambda: shim
    major, minor = front.nvrtc_version()
    release = f"{major}.{minor}"
    Device("cpu").set_current()
    for case in (c for c in ck.CASES if c.name in cases):
        source = (ck.KERNELS / f"{case.source}.cu").read_text()
        program = Program(source, code_type="c++")
        (out / f"{case.name}.{release}.ptx").write_text(program.compile("native").ptx)
    return release


def _compile(library: str, cases: list[str], out: Path) -> str:
    """A child process's _write_ptx, with a fresh PTX cache (ptxport's key names the venv's
    NVRTC wheel, whichever libnvrtc compiled)."""
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run([sys.executable, __file__, "--child", library, ",".join(cases),
                               str(out)], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT), PTXPORT_CACHE_DIR=cache))
    if done.returncode:
        raise SystemExit(f"compiling with {library or 'the venv NVRTC'} failed:\n{done.stderr}")
    return done.stdout.split()[-1]


def _trace(case: str, ptx: Path, size: int | None) -> tuple[int, dict[str, int]]:
    """trace_blocks' count of the traced call and its instructions by LLVM block."""
    command = [sys.executable, str(TRACE), case, "--ptx", str(ptx), "--top", "1000"]
    if size is not None:
        command += ["--size", str(size)]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"call \d+: (\d+) instructions", text).group(1))
    blocks: dict[str, int] = {}
    for found in re.finditer(r"^\s+(\d+)  (\S+)$", text, re.MULTILINE):
        # LLVM's inliner numbers its copies (`%seg6_enter_all.i27477`, `%gang.exit2677.thread`)
        # differently in the two modules: compare the names without the numbers
        name = re.sub(r"(\.i)?\d+(?=\.|$)", "", found.group(2))
        blocks[name] = blocks.get(name, 0) + int(found.group(1))
    return total, blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nvrtc", required=True, help="the other release's libnvrtc.so")
    parser.add_argument("--kernels", default=None, help="cases, comma-separated (all)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "nvrtc")
    parser.add_argument("--size", type=int, default=None, help="trace_blocks' --size")
    parser.add_argument("--no-trace", action="store_true", help="write the PTX only")
    parser.add_argument("--top", type=int, default=4, help="blocks listed per case")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import cpu_kernels as ck
    cases = args.kernels.split(",") if args.kernels else [c.name for c in ck.CASES]
    args.out.mkdir(parents=True, exist_ok=True)
    ours = _compile("", cases, args.out)
    other = _compile(str(Path(args.nvrtc).resolve()), cases, args.out)
    print(f"PTX of NVRTC {ours} (the venv's) and {other} under {args.out}")
    if args.no_trace:
        return
    print(f"{'case':14s} {ours:>8s} {other:>8s}  ratio  blocks that differ most ({other} - "
          f"{ours})")
    for case in cases:
        a, a_blocks = _trace(case, args.out / f"{case}.{ours}.ptx", args.size)
        b, b_blocks = _trace(case, args.out / f"{case}.{other}.ptx", args.size)
        moved = sorted(((b_blocks.get(k, 0) - a_blocks.get(k, 0), k)
                        for k in set(a_blocks) | set(b_blocks)), key=lambda d: -abs(d[0]))
        shown = ", ".join(f"{k} {d:+d}" for d, k in moved[:args.top] if d)
        print(f"{case:14s} {a:8d} {b:8d}  {b / a:5.2f}  {shown}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(_write_ptx(sys.argv[2], sys.argv[3].split(","), Path(sys.argv[4])))
    else:
        main()
