"""How many cache lines does the launch path touch when the launching thread's caches are
cold? (benchmarks/launch_cold.py times it; this counts what the time comes from.)

Runs a cpu_kernels case (the stencil at 2048 by default) under valgrind's callgrind with
its cache simulator (I1/D1 as the machine's, a 2 MB last level: a core's L2 on the GPU
host) and counts, on the launching thread, the instructions and the last-level misses of
  L  launch(), after a numpy pass over 32 MB (the caches cold, as after a kernel's run);
  S  sync(), after the kernel's own run (its share of the blocks evicts), the native run
     itself (the pool's and the kernel's code and data) taken out.
Needs valgrind with its headers, a C compiler and Python's headers (a small extension
issues callgrind's client requests: a ctypes call would warm the very code measured).
Medians (and the least) over --runs launches, after 30 untimed ones; the pool's threads
spin for 30 s after a launch (set_spin), so that none is parked (as on the GPU host in
a row of launches). Counts move by a few percent from run to run with how the threads
interleave under valgrind: compare trees run after one another, not in parallel.

    python benchmarks/launch_cachelines.py [--kernel stencil] [--size 2048] [--workers 2]
                                           [--runs 7]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXTENSION = r"""
#include <Python.h>
#include <valgrind/callgrind.h>
#define REQUEST(name, request) \
    static PyObject *name(PyObject *s, PyObject *a) { request; Py_RETURN_NONE; }
REQUEST(start, CALLGRIND_START_INSTRUMENTATION)
REQUEST(toggle, CALLGRIND_TOGGLE_COLLECT)
REQUEST(zero, CALLGRIND_ZERO_STATS)
REQUEST(dump, CALLGRIND_DUMP_STATS_AT(PyBytes_AsString(a)))
static PyMethodDef methods[] = {{"start", start, METH_NOARGS, 0},
    {"toggle", toggle, METH_NOARGS, 0}, {"zero", zero, METH_NOARGS, 0},
    {"dump", dump, METH_O, 0}, {0}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "cgext", 0, -1, methods};
PyMODINIT_FUNC PyInit_cgext(void) { return PyModule_Create(&module); }
"""
# The C API functions the pool's builtins call (pool_calls.py): callgrind counts them
# inside the native region, where ctypes' own calls of them were counted outside it.
API = ("PyEval_SaveThread", "PyEval_RestoreThread", "PyLong_AsVoidPtr", "Py_IncRef",
       "PyErr_Occurred")


def child(opts) -> None:
    """Under valgrind: the launches, with the client requests around L and S."""
    sys.path[:0] = [opts.build, str(HERE)]
    import cgext
    import cpu_kernels as ck
    import numpy as np

    from ptxport import Device, launch
    from ptxport.runtime.backends.cpu import executor
    from ptxport.runtime.backends.cpu import pool as cpu_pool

    executor.set_workers(opts.workers)
    cpu_pool.set_spin(30.0)
    case = next(c for c in ck.CASES if c.name == opts.kernel)
    problem = case.make(opts.size, np.random.default_rng(0))
    dev = Device("cpu")
    dev.set_current()
    stream = dev.create_stream()
    run = ck.PtxportRun(case, problem, dev, stream, {})
    run.first_run()
    (config, names), = problem.launches
    args = tuple(run.buffers[a] if isinstance(a, str) else a for a in names)
    big = np.ones(8 << 20, np.float32)
    native = cpu_pool._native()._engine
    for name in ("ptxport_pool_run", "ptxport_pool_open"):
        print("NATIVE", hex(native.get_function_address(name)), flush=True)
    for _ in range(30):
        launch(stream, config, run.kernel, *args)
        stream.sync()
    cgext.start()
    for number in range(2 + opts.runs):
        np.add(big, 1.0, out=big)
        cgext.zero()
        cgext.toggle()
        launch(stream, config, run.kernel, *args)
        cgext.dump(b"L" if number >= 2 else b"warm")
        stream.sync()
        cgext.dump(b"S" if number >= 2 else b"warm")
        cgext.toggle()


def _row(line: str) -> tuple[list[int], str] | None:
    """callgrind_annotate's line: its numbers ("." for 0; percentages dropped), its name."""
    match = re.match(r"^\s*((?:(?:[\d,]+|\.)(?: \(\s*[\d.]+%\))?\s+)+)(\S.*)$", line)
    if match is None:
        return None
    numbers = re.sub(r"\(\s*[\d.]+%\)", "", match.group(1)).split()
    return [0 if n == "." else int(n.replace(",", "")) for n in numbers], match.group(2)


def _counts(path: str, natives: list[int]) -> tuple[str, list[int]] | None:
    """(label, [Ir, LL misses]) of one dump, the native region's inclusive cost out."""
    text = Path(path).read_text()
    label = re.search(r"Trigger: Client Request: (\w+)", text)
    if label is None or label.group(1) == "warm":
        return None
    shows = ["Ir", "ILmr", "DLmr", "DLmw"]
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", f"--show={','.join(shows)}", path],
        capture_output=True, text=True, check=True).stdout
    total, region, api = None, None, [0] * 4
    for line in annotated.splitlines():
        row = _row(line)
        if row is None or len(row[0]) != 4:
            continue
        numbers, name = row
        native = re.match(r"\?\?\?:0x([0-9a-f]+)(\S*)", name)
        if name.startswith("PROGRAM TOTALS"):
            total = numbers
        elif native and not native.group(2).startswith("'") and any(
                abs(int(native.group(1), 16) - n) < 0x10000 for n in natives):
            if region is None or numbers[0] > region[0]:
                region = numbers
        elif re.search(r":({}) ".format("|".join(API)), name + " ") and "'" not in name:
            api = [a + n for a, n in zip(api, numbers, strict=True)]
    if region is not None:
        total = [t - r + a for t, r, a in zip(total, region, api, strict=True)]
    return label.group(1), [total[0], sum(total[1:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="stencil")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts)
        return
    with tempfile.TemporaryDirectory() as build:
        source = Path(build) / "cgext.c"
        source.write_text(EXTENSION)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                        "-o", str(Path(build) / f"cgext{sysconfig.get_config_var('EXT_SUFFIX')}"),
                        str(source)], check=True)
        out = Path(build) / "cg.out"
        log = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
             "--separate-threads=yes", "--cache-sim=yes", "--LL=2097152,16,64",
             f"--callgrind-out-file={out}", sys.executable, __file__, "--child",
             f"--build={build}", f"--kernel={opts.kernel}", f"--size={opts.size}",
             f"--workers={opts.workers}", f"--runs={opts.runs}"],
            capture_output=True, text=True, env={**os.environ}, check=True).stdout
        natives = [int(a, 16) for a in re.findall(r"NATIVE (0x[0-9a-f]+)", log)]
        rows: dict[str, list] = {}
        for path in glob.glob(f"{out}.*-01"):       # (the launching thread's dumps)
            counted = _counts(path, natives)
            if counted is not None:
                rows.setdefault(counted[0], []).append(counted[1])
    print(f"{opts.kernel} {opts.size}, {opts.workers} worker(s), {opts.runs} launches, cold:")
    for label in ("L", "S"):
        got = rows.get(label, [])
        if got:
            print(f"  {label}: instructions {statistics.median(r[0] for r in got):8.0f}, "
                  f"last-level misses {statistics.median(r[1] for r in got):6.0f} (median), "
                  f"{min(r[1] for r in got):6.0f} (least)")


if __name__ == "__main__":
    main()
