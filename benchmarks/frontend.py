"""How fast does ptxport read PTX, and how much memory does it take?

Builds a PTX module of at least 5 MB from the kernel corpus (NVRTC's sm_90 output of every
tests/kernels/*.cu file, copied with renamed symbols until the size is reached), then measures
  - parse (text -> syntax tree) and build (tree -> IR) throughput in MB/s of PTX, on one
    core, as the median of several runs (and the IR verifier's time, reported apart);
  - peak memory of parse + build as traced by tracemalloc (Python allocations, including the
    resulting tree and IR), as a multiple of the file size.
Goals (issue "ptxport foundation"): >= 2 MB/s, peak < 20x the file size.

It also reports how much of the PTX ISA's instruction table the hand-written PTX of
tests/ptx_handwritten exercises (every file there is accepted by ptxas).

    python benchmarks/frontend.py [--mb 5] [--runs 5]

prints a table and writes benchmarks/results/frontend.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from corpus import corpus_ptx, corpus_sources  # noqa: E402
from ptxport.ir.from_ptx import build  # noqa: E402
from ptxport.ir.verify import verify  # noqa: E402
from ptxport.ptx import ast  # noqa: E402
from ptxport.ptx.isa import OPS  # noqa: E402
from ptxport.ptx.parser import parse  # noqa: E402

_HEADER = re.compile(r"^\s*\.(version|target|address_size)\b[^\n]*\n", re.MULTILINE)


def _renamed_body(text: str, suffix: str) -> str:
    """The module's items without its header, every symbol it defines renamed."""
    module = parse(text)
    names = [i.name for i in module.items
             if isinstance(i, ast.Function | ast.Variable) and "extern" not in i.linkage]
    body = _HEADER.sub("", text)
    if names:
        pattern = re.compile(r"(?<![\w$%])(" + "|".join(map(re.escape, names)) + r")(?![\w$])")
        body = pattern.sub(lambda m: m.group(1) + suffix, body)
    return body


def make_large_ptx(megabytes: float) -> str:
    sources = [corpus_ptx(path, "sm_90") for path in corpus_sources()]
    header = ".version 9.5\n.target sm_90\n.address_size 64\n"
    parts, size, copy = [header], len(header), 0
    while size < megabytes * 1e6:
        for index, text in enumerate(sources):
            body = _renamed_body(text, f"_c{copy}_{index}")
            parts.append(body)
            size += len(body)
        copy += 1
    return "".join(parts)


def time_once(text: str) -> tuple[float, float, float]:
    gc.collect()
    t0 = time.process_time()
    module = parse(text, "large.ptx")
    t1 = time.process_time()
    ir_module = build(module)
    t2 = time.process_time()
    verify(ir_module)
    t3 = time.process_time()
    return t1 - t0, t2 - t1, t3 - t2


def peak_memory(text: str) -> int:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    ir_module = build(parse(text, "large.ptx"))
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del ir_module
    return peak


def isa_coverage() -> dict:
    handwritten = sorted((ROOT / "tests" / "ptx_handwritten").glob("*.ptx"))
    used: set[str] = set()
    for path in handwritten:
        module = parse(path.read_text(), str(path))
        stack = [s for f in module.functions for s in (f.body or [])]
        while stack:
            s = stack.pop()
            if isinstance(s, ast.Block):
                stack.extend(s.statements)
            elif isinstance(s, ast.Instruction):
                used.add(s.opcode)
    families: dict[str, list[int]] = {}
    for op in OPS.values():
        entry = families.setdefault(op.family, [0, 0])
        entry[0] += 1
        entry[1] += op.name in used
    return {"opcodes": len(OPS), "opcodes_exercised": len(used & set(OPS)),
            "families": {k: {"opcodes": v[0], "exercised": v[1]}
                         for k, v in sorted(families.items())},
            "files": len(handwritten)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=5.0, help="size of the PTX file (MB)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs (median reported)")
    args = parser.parse_args()

    text = make_large_ptx(args.mb)
    size_mb = len(text.encode()) / 1e6
    instructions = sum(1 for line in text.splitlines() if line.strip().endswith(";"))
    runs = [time_once(text) for _ in range(args.runs)]
    parse_s = statistics.median(r[0] for r in runs)
    build_s = statistics.median(r[1] for r in runs)
    verify_s = statistics.median(r[2] for r in runs)
    total_s = statistics.median(r[0] + r[1] for r in runs)
    checked_s = statistics.median(sum(r) for r in runs)
    peak = peak_memory(text)
    coverage = isa_coverage()

    rows = [
        ("PTX size", f"{size_mb:.2f} MB ({instructions} statements)"),
        ("parse", f"{parse_s:.2f} s  {size_mb / parse_s:.2f} MB/s"),
        ("build IR", f"{build_s:.2f} s  {size_mb / build_s:.2f} MB/s"),
        ("parse + build IR", f"{total_s:.2f} s  {size_mb / total_s:.2f} MB/s"
                             "   (goal >= 2 MB/s)"),
        ("verify IR (extra)", f"{verify_s:.2f} s; parse + build + verify "
                              f"{size_mb / checked_s:.2f} MB/s"),
        ("peak memory (tracemalloc)", f"{peak / 1e6:.1f} MB = {peak / len(text):.1f}x the file"
                                      "   (goal < 20x)"),
        ("ISA opcodes parsed from ptxas-checked PTX",
         f"{coverage['opcodes_exercised']} of {coverage['opcodes']} in the instruction table"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"ptxport front end, one core, median of {args.runs} runs (process time)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print("  per family (opcodes exercised / in the table):")
    for family, counts in coverage["families"].items():
        print(f"    {family:<45} {counts['exercised']:>3} / {counts['opcodes']}")

    result = {
        "size_bytes": len(text.encode()), "statements": instructions, "runs": args.runs,
        "parse_s": parse_s, "build_s": build_s, "verify_s": verify_s, "total_s": total_s,
        "throughput_mb_s": size_mb / total_s,
        "throughput_with_verify_mb_s": size_mb / checked_s, "peak_bytes": peak,
        "peak_over_size": peak / len(text), "isa": coverage,
    }
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "frontend.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
