"""What share of a corpus's kernels does each target compile, and what refuses the rest?

Every .cu file under the given directories is built to PTX for sm_80 by the nvcc of NVIDIA's
PyPI wheels (as tests/programs_harness.py finds it; the cccl wheel's headers and the file's
own directory on the include path). A file that declares what another translation unit
defines (an `-rdc` program's cross-file calls and `extern __device__` variables) is linked
with the units of its directory that define it (ptx/link.py, as `ptxport run` links a
program's units); its own kernels are counted, not theirs. Each kernel is then compiled
for real (the target's code generator, LLVM included; not only `ptxport inspect`'s checker)
for cpu, nvptx:sm_80, amdgpu:gfx1100 and spirv, one kernel at a time (its module cut down to
the kernel and the device functions it reaches), so that one refusal does not hide the
others. Files build and
compile in parallel child processes, each file under a timeout (an LLVM abort costs
only the compile it happened in).

    python benchmarks/corpus_coverage.py PATH... [--jobs N] [--timeout S] [-I DIR]...

prints, per target, the share of kernels that compile and the most frequent refusals (error
class and instruction), and writes benchmarks/results/corpus_coverage.json.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TARGETS = ("cpu", "nvptx:sm_80", "amdgpu:gfx1100", "spirv")
RESULTS = ROOT / "benchmarks" / "results" / "corpus_coverage.json"


def nvcc_ptx(source: Path, includes: list[str], timeout: float, rdc: bool = False) -> str:
    """The PTX nvcc makes of `source` for sm_80 (cached by content and flags), with -rdc=true
    where asked or where nvcc needs it. cublas_v2.h and cublasLt.h are ptxport's own (the nvcc
    wheel has none), as tests/programs_harness.py builds programs that link cuBLAS."""
    from programs_harness import CUBLAS_INCLUDE, toolkit_root

    root = toolkit_root()
    flags = ["-arch=sm_80", "--ptx", "-std=c++17", "--extended-lambda",
             f"-I{root / 'include' / 'cccl'}", f"-I{source.parent}", *(f"-I{d}" for d in includes),
             f"-I{CUBLAS_INCLUDE}"]
    if not rdc:
        try:
            return _nvcc(source, root, flags, timeout)
        except RuntimeError:   # device-side launches and extern device code need -rdc=true
            pass
    return _nvcc(source, root, [*flags, "-rdc=true"], timeout)


def linked_ptx(source: Path, includes: list[str], timeout: float) -> tuple[str, set[str]]:
    """The PTX of `source`, linked (ptx/link.py, as `ptxport run` links a program's -rdc
    units) with the units of its own directory that define what it declares `.extern`: the
    other translation units of its program. Returns the text and the names of the kernels
    of `source` itself (the others are counted in their own files); an extern that no unit
    there defines stays (the compile names it, or the runtime provides it: vprintf, malloc,
    device-side launches)."""
    from ptxport.errors import CompileError
    from ptxport.ptx.link import link_text
    from ptxport.ptx.parser import parse

    texts, units = [nvcc_ptx(source, includes, timeout)], [str(source)]
    own = parse(texts[0], str(source))
    kernels = {f.name for f in own.functions if f.is_kernel and f.body is not None}
    needed = _externs(own)
    if not needed:
        return texts[0], kernels
    siblings = [s for s in sorted(source.parent.glob("*.cu")) if s != source]
    for sibling in _units_defining(siblings, needed, includes, timeout):
        texts.append(sibling[0])
        units.append(sibling[1])
    try:
        return (link_text(texts, units) if len(texts) > 1 else texts[0]), kernels
    except CompileError:   # the units clash (two programs in one directory): the file alone
        return texts[0], kernels


def _units_defining(siblings: list[Path], needed: set[str], includes: list[str],
                    timeout: float) -> list[tuple[str, str]]:
    """(PTX text, path) of the units among `siblings` that define what `needed` names, and
    then what those need in turn."""
    found, built, defined = [], {}, set()
    while True:
        missing = needed - defined
        todo = [s for s in siblings if s not in built and _may_define(s, missing)]
        if not missing or not todo:
            return found
        for sibling in todo:
            built[sibling] = unit = _unit(sibling, includes, timeout)
            if unit is not None and unit[1] & (needed - defined):
                found.append((unit[0], str(sibling)))
                defined |= unit[1]
                needed |= unit[2]


def _source_names(symbol: str) -> set[str]:
    """The identifiers of the source that a (possibly mangled) PTX name holds: `mix` of
    `_Z3mixii`, `ns` and `f` of `_ZN2ns1fEv`, the name itself where it is not mangled."""
    if not symbol.startswith("_Z"):
        return {symbol}
    names, at = set(), 2
    while at < len(symbol):
        digits = re.match(r"\d+", symbol[at:])
        if not digits:
            at += 1
            continue
        at += len(digits.group())
        names.add(symbol[at:at + int(digits.group())])
        at += int(digits.group())
    return names


def _may_define(source: Path, needed: set[str]) -> bool:
    """Whether `source`'s text names something `needed` holds (so that only those siblings
    are built: a directory may hold many programs)."""
    text = source.read_text(errors="replace")
    return any(re.search(rf"\b{re.escape(name)}\b", text)
               for symbol in needed for name in _source_names(symbol) if len(name) > 2)


# what the driver provides, not another unit (PTX ISA, "System Calls")
_SYSTEM_CALLS = frozenset(("vprintf", "malloc", "free", "__assertfail"))


def _unit(source: Path, includes: list[str], timeout: float):
    """(PTX text, names it defines for other units, names it declares extern) of a unit built
    with -rdc=true, or None where nvcc or the parser refuses it."""
    from ptxport.ptx.parser import parse

    try:
        text = nvcc_ptx(source, includes, timeout, rdc=True)
        module = parse(text, str(source))
    except Exception:   # not a unit of this program (a host-only file, another program's)
        return None
    exports = {item.name for item in module.items if getattr(item, "linkage", None) is not None
               and ("visible" in item.linkage or "weak" in item.linkage)
               and not _declares(item)}
    return text, exports, _externs(module)


def _externs(module) -> set[str]:
    """What `module` declares, does not define, and another unit would: not the driver's
    system calls nor the device runtime's functions (ptxport provides those)."""
    from ptxport.codegen import device_runtime

    items = [item for item in module.items if getattr(item, "linkage", None) is not None]
    declared = {item.name for item in items if _declares(item)} - _SYSTEM_CALLS
    return {name for name in declared - {item.name for item in items if not _declares(item)}
            if device_runtime.canonical_name(name) is None}


def _declares(item) -> bool:
    """A declaration of something another unit defines (PTX ISA, "Linking Directives")."""
    from ptxport.ptx import ast

    if isinstance(item, ast.Function):
        return item.body is None
    return isinstance(item, ast.Variable) and "extern" in item.linkage


def _nvcc(source: Path, root: Path, flags: list[str], timeout: float) -> str:
    from programs_harness import build_env, cache_root

    key = hashlib.sha256(source.read_bytes() + " ".join(flags).encode()).hexdigest()[:24]
    cached = cache_root().parent / "coverage" / f"{key}.ptx"
    if cached.is_file():
        return cached.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.ptx"
        done = subprocess.run([str(root / "bin" / "nvcc"), *flags, str(source), "-o", str(out)],
                              env=build_env(root), capture_output=True, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "nvcc")
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(out.read_text())
        return cached.read_text()


def kernel_module(module, kernel):
    """`module` cut down to `kernel` and the device functions it may reach (calls, function
    addresses, and the functions that globals' initializers name: vtables, function-pointer
    tables), sharing everything else."""
    from ptxport.ir import nodes as ir

    named = [item for var in module.globals.values() for item in var.init or ()]
    reached, todo = {}, [kernel] + [f for f in _flat(named) if isinstance(f, ir.Function)]
    launched = set()    # kernels whose address it takes (device-side launches name them)
    while todo:
        function = todo.pop()
        if function.name in reached:
            continue
        reached[function.name] = function
        for inst in function.instructions():
            for operand in _flat(inst.operands):
                if isinstance(operand, ir.Function) and not operand.is_kernel:
                    todo.append(operand)
                elif isinstance(operand, ir.Function):
                    launched.add(operand.name)
    functions = {name: f for name, f in module.functions.items()
                 if name in launched or (name in reached and (f is kernel or not f.is_kernel))}
    return dataclasses.replace(module, functions=functions)


def _flat(operands):
    from ptxport.ir import nodes as ir

    for operand in operands:
        if isinstance(operand, ir.ListValue | ir.VectorValue):
            yield from _flat(operand.elements)
        elif isinstance(operand, ir.SymbolAddress):
            yield operand.target
        elif isinstance(operand, tuple):     # an initializer's (target, offset, generic)
            yield operand[0]
        else:
            yield operand


_OPCODE = re.compile(r"'([a-z][a-z0-9_]*)(?:\.[^' ]*)?'|\b([a-z][a-z0-9]*)\.[a-z0-9.]+ ")


def refusal(error: Exception) -> str:
    """`ErrorClass: instruction` (or the start of the reason) for a refused kernel."""
    feature = getattr(error, "feature", None)
    if feature:
        what = str(feature).split()[0].split(".")[0]
        reason = getattr(error, "reason", "")
        if reason:
            what = f"{what} ({reason[:48]})"
    else:
        match = _OPCODE.search(str(error))
        what = (match.group(1) or match.group(2)) if match else str(error)[:60]
    return f"{type(error).__name__}: {what}"


def cover_file(path: str, includes: list[str], timeout: float) -> dict:
    """{"file", "error"?, "kernels": {kernel: {target: None or refusal}}} of one .cu file.

    The work runs in a child process (`--one`) that prints one JSON line per result: LLVM
    aborts the process on some inputs, and then the (kernel, target) being compiled is
    recorded as the crash and a new child goes on after it. The whole file has `timeout`."""
    report: dict = {"file": path, "kernels": {}}
    done: list = []
    deadline = time.monotonic() + timeout
    while True:
        command = [sys.executable, __file__, "--one", path, "--skip", str(len(done)),
                   *(f"-I{d}" for d in includes)]
        try:
            child = subprocess.run(command, capture_output=True, text=True, check=False,
                                   timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            report["error"] = f"timeout after {timeout}s"
            break
        lines = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
        if lines and "error" in lines[0]:
            report["error"] = lines[0]["error"]
            break
        if not lines:
            tail = child.stderr.strip().splitlines()
            report["error"] = f"the child failed: {tail[-1] if tail else child.returncode}"
            break
        plan = next((line["plan"] for line in lines if "plan" in line), None)
        done += [line for line in lines if "kernel" in line]
        if child.returncode == 0 or plan is None or len(done) >= len(plan):
            break
        kernel, target = plan[len(done)]   # the compile the process died in
        tail = child.stderr.strip().splitlines()
        done.append({"kernel": kernel, "target": target,
                     "refusal": f"crash: {tail[-1][:60] if tail else child.returncode}"})
    for line in done:
        report["kernels"].setdefault(line["kernel"], {})[line["target"]] = line["refusal"]
    return report


def cover_one(path: str, includes: list[str], skip: int) -> None:
    """The child's side of cover_file: JSON lines on stdout, the plan first."""
    from ptxport.codegen.compile import compile_for_target
    from ptxport.ir.from_ptx import build
    from ptxport.ir.verify import verify
    from ptxport.ptx.parser import parse

    try:
        ptx, own = linked_ptx(Path(path), includes, 600.0)
        module = build(parse(ptx, path))
        verify(module)
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {str(error)[:200]}"}), flush=True)
        return
    plan = [(k.name, target) for k in module.kernels if k.name in own for target in TARGETS]
    print(json.dumps({"plan": plan}), flush=True)
    for kernel_name, target in plan[skip:]:
        try:
            compile_for_target(kernel_module(module, module.functions[kernel_name]), target)
            outcome = None
        except Exception as error:   # counted per kernel and target
            outcome = refusal(error)
        print(json.dumps({"kernel": kernel_name, "target": target, "refusal": outcome}),
              flush=True)


def sources(paths: list[str]) -> list[str]:
    found = []
    for path in map(Path, paths):
        found += [str(path)] if path.is_file() else sorted(map(str, path.rglob("*.cu")))
    return found


def summarize(reports: list[dict], top: int = 8) -> dict:
    summary = {"files": len(reports), "files_not_built": [r["file"] for r in reports
                                                          if r.get("error")],
               "kernels": sum(len(r["kernels"]) for r in reports), "targets": {}}
    for target in TARGETS:
        outcomes = [k[target] for r in reports for k in r["kernels"].values()]
        refused = collections.Counter(o for o in outcomes if o is not None)
        summary["targets"][target] = {
            "compiled": sum(o is None for o in outcomes), "kernels": len(outcomes),
            "top_refusals": refused.most_common(top)}
    return summary


def print_table(summary: dict) -> None:
    print(f"{summary['files']} files ({len(summary['files_not_built'])} not built by nvcc), "
          f"{summary['kernels']} kernels")
    print(f"{'target':16} {'compiled':>10} {'share':>8}   top refusals")
    for target, t in summary["targets"].items():
        share = 100.0 * t["compiled"] / t["kernels"] if t["kernels"] else 0.0
        refusals = "; ".join(f"{what} x{n}" for what, n in t["top_refusals"][:4]) or "-"
        print(f"{target:16} {t['compiled']:>5}/{t['kernels']:<4} {share:7.1f}%   {refusals}")
    for path in summary["files_not_built"]:
        print(f"not built: {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per file")
    parser.add_argument("-I", dest="includes", action="append", default=[])
    parser.add_argument("--json", default=str(RESULTS))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        cover_one(args.one, args.includes, args.skip)
        return 0
    if not args.paths:
        parser.error("give directories or .cu files")
    files = sources(args.paths)
    reports = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(cover_file, f, args.includes, args.timeout): f for f in files}
        for future, path in futures.items():
            try:
                reports.append(future.result())
            except Exception as error:   # a failure of the harness itself fails the file only
                reports.append({"file": path, "error": f"{type(error).__name__}: {error}",
                                "kernels": {}})
    summary = summarize(reports)
    print_table(summary)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"summary": summary, "files": reports}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
