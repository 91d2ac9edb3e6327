"""Medians over several benchmark processes: the statistics cpu_kernels.py --processes and
cpu_compare.py share (no ptxport or numpy here, so tests/test_bench_stats.py checks them
without timing anything).

A host that runs other work swings whole processes: on the GPU machine's Xeon one process of
cpu_kernels.py ran up to 2x slower than the next, and its one-core geometric mean ranged
1.41-1.71 over 7 runs of the same code. So the figure to quote is, per kernel and core count,
the median over processes of each process's ratio ptxport / C (both sides timed in the same
process, so a slow process slows both), with the least and largest ratio beside it; the
headline is the geometric mean of those medians. A kernel's *noise* is its largest ratio over
its least: how far two processes of the same code disagreed.
"""

from __future__ import annotations

import functools
import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Iterable


def geomean(values: Iterable[float]) -> float | None:
    """The geometric mean of positive values; None for none."""
    values = list(values)
    return math.exp(statistics.fmean(map(math.log, values))) if values else None


def spread(values: Iterable[float]) -> dict:
    """median, min, max and noise (max / min) of positive values."""
    values = list(values)
    least, most = min(values), max(values)
    return {"median": statistics.median(values), "min": least, "max": most,
            "noise": most / least}


# The per-process fields of a kernel's cell that become medians over processes; "ratio" is
# the median of the processes' ratios, not the ratio of the median times.
_MEDIAN_FIELDS = ("c_ms", "ptxport_ms", "ratio")
# Fields only some kernels' cells have (cpu_kernels.py's Problem.c_tree: "c_tree_ms",
# "tree_ratio"), merged the same way over the processes that have them.
_OPTIONAL_FIELDS = ("c_tree_ms", "tree_ratio")


def merge_cells(cells: list[dict]) -> dict:
    """One kernel's cells at one core count, one per process (cpu_kernels.py's
    {"c_ms", "ptxport_ms", "ratio", "runs", ...}), as one cell: the medians of c_ms,
    ptxport_ms and ratio; "runs" the fewest any process timed; the per-process values in
    "per_process"; the ratio's min, max and noise. Cells without a ratio (a kernel not run)
    give the median C time only."""
    timed = [c for c in cells if "ratio" in c]
    if not timed:
        c_ms = [c["c_ms"] for c in cells if "c_ms" in c]
        return {"c_ms": statistics.median(c_ms)} if c_ms else {}
    merged = {name: statistics.median(c[name] for c in timed) for name in _MEDIAN_FIELDS}
    ratio = spread(c["ratio"] for c in timed)
    merged.update(runs=min(c.get("runs", 0) for c in timed), processes=len(timed),
                  ratio_min=ratio["min"], ratio_max=ratio["max"], noise=ratio["noise"],
                  per_process={name: [c[name] for c in timed] for name in _MEDIAN_FIELDS})
    for name in _OPTIONAL_FIELDS:
        values = [c[name] for c in timed if name in c]
        if values:
            merged[name] = statistics.median(values)
            merged["per_process"][name] = values
    return merged


def merge_rows(runs: list[list[dict]]) -> list[dict]:
    """Each process's rows (cpu_kernels.py's "kernels": one dict per kernel, "cores" mapping
    a core count to its cell) as one list of rows: the first process's description of each
    kernel, the first status that is not "ok" (with how many processes saw it), and per core
    count the merged cell (merge_cells). Kernels in the order the first process listed them;
    one missing from a process is merged over the processes that have it."""
    by_kernel: dict[str, list[dict]] = {}
    for rows in runs:
        for row in rows:
            by_kernel.setdefault(row["kernel"], []).append(row)
    merged = []
    for rows in by_kernel.values():
        row = {key: value for key, value in rows[0].items() if key not in ("cores", "status")}
        bad = [r["status"] for r in rows if r["status"] != "ok"]
        row["status"] = "ok" if not bad else (
            bad[0] if len(bad) == len(rows) else f"{bad[0]} (in {len(bad)} of {len(rows)} "
                                                 f"processes)")
        cores = list(dict.fromkeys(c for r in rows for c in r["cores"]))
        row["cores"] = {c: merge_cells([r["cores"][c] for r in rows if c in r["cores"]])
                        for c in cores}
        if any("first_launch_ms" in r for r in rows):
            row["first_launch_ms"] = statistics.median(
                r["first_launch_ms"] for r in rows if "first_launch_ms" in r)
        merged.append(row)
    return merged


def process_geomeans(runs: list[list[dict]], core_counts: Iterable) -> dict[str, dict]:
    """Per core count: each process's own geometric mean of ptxport / C (over its kernels
    that ran) and their spread. A process's geometric mean moves with the whole process; the
    per-kernel medians (merge_rows) do not follow any one process."""
    out = {}
    for cores in map(str, core_counts):
        means = [geomean(r["cores"][cores]["ratio"] for r in rows
                         if r["status"] == "ok" and "ratio" in r["cores"].get(cores, {}))
                 for rows in runs]
        means = [m for m in means if m is not None]
        out[cores] = {"per_process": means, **(spread(means) if means else {})}
    return out


def noisiest(rows: list[dict], cores: str) -> tuple[float, str] | None:
    """The largest noise (max / min ratio over processes) at `cores`, and its kernel."""
    cells = [(r["cores"][cores]["noise"], r["kernel"]) for r in rows
             if "noise" in r["cores"].get(cores, {})]
    return max(cells) if cells else None


def paired_change(other: list[float], this: list[float]) -> dict:
    """The spread (spread()) of this[i] / other[i]: two sides measured in pairs (a round of
    cpu_compare.py runs one process of each, one after the other), so that what slowed the
    host during a round slowed both of its pair."""
    return spread(b / a for a, b in zip(other, this, strict=True))


# cpu_scaling.py's traced columns: medians over the processes that traced them.
_TRACE_FIELDS = ("late_us", "idle", "gap_ms", "busy_us", "outside_us", "open_us")


def merge_scaling(runs: list[list[dict]]) -> list[dict]:
    """cpu_scaling.py's rows of several processes (per process one row per kernel and size:
    {"kernel", "size", "blocks", "status", "workers": {count: cell}}, a cell C's and
    ptxport's median ms, their ratio and the traced columns) as one list of rows: per worker
    count the merged cell (merge_cells), the traced columns' medians, and the parallel
    efficiency t(1) / (k * t(k)) of each side from the *median* times, with the least and
    largest of the processes' own efficiencies (process i's t(1) against its t(k)) beside
    it; "work" is the median busy time at k over that at 1."""
    by_row: dict[tuple, list[dict]] = {}
    for rows in runs:
        for row in rows:
            by_row.setdefault((row["kernel"], row["size"]), []).append(row)
    merged = []
    for rows in by_row.values():
        row = {key: value for key, value in rows[0].items() if key not in ("workers", "status")}
        bad = [r["status"] for r in rows if r["status"] != "ok"]
        row["status"] = "ok" if not bad else f"{bad[0]} (in {len(bad)} of {len(rows)} " \
                                              f"processes)"
        counts = sorted({int(k) for r in rows for k in r["workers"]})
        row["workers"] = {}
        for k in map(str, counts):
            cells = [r["workers"][k] for r in rows if k in r["workers"]]
            cell = merge_cells(cells)
            for name in _TRACE_FIELDS:
                values = [c[name] for c in cells if name in c]
                if values:
                    cell[name] = statistics.median(values)
            row["workers"][k] = cell
        _efficiencies(row["workers"], rows)
        merged.append(row)
    return merged


def _efficiencies(cells: dict[str, dict], rows: list[dict]) -> None:
    """merge_scaling's efficiencies and work, in place (nothing without one worker's cell)."""
    one = cells.get("1")
    if not one or "ptxport_ms" not in one:
        return
    for k, cell in cells.items():
        if "ptxport_ms" not in cell:
            continue
        for side in ("ptxport", "c"):
            cell[f"{side}_efficiency"] = one[f"{side}_ms"] / (int(k) * cell[f"{side}_ms"])
            own = [r["workers"]["1"][f"{side}_ms"] / (int(k) * r["workers"][k][f"{side}_ms"])
                   for r in rows if "ptxport_ms" in r["workers"].get("1", {})
                   and "ptxport_ms" in r["workers"].get(k, {})]
            if own:
                cell[f"{side}_efficiency_min"] = min(own)
                cell[f"{side}_efficiency_max"] = max(own)
        if cell.get("busy_us") and one.get("busy_us"):
            cell["work"] = cell["busy_us"] / one["busy_us"]


def block_order(rounds: int) -> list[tuple[str, ...]]:
    """The sides' blocks in each round of cpu_kernels.py's --order rounds: C first in even
    rounds, ptxport first in odd ones (C P | P C | C P ...), so that a drift of the host
    over the rounds (a core warming, a neighbour starting) favours neither side."""
    return [("c", "ptxport") if r % 2 == 0 else ("ptxport", "c") for r in range(rounds)]


def cpu_ranges(cpus: list[int]) -> str:
    """Sorted CPU numbers in taskset's notation: [0, 1, 2, 5] -> "0-2,5"."""
    parts, first = [], None
    for i, cpu in enumerate(cpus):
        first = cpu if first is None else first
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(f"{first}-{cpu}" if cpu != first else str(cpu))
            first = None
    return ",".join(parts)


def run_child(command: list[str], cpu: int | None, label: str) -> dict | None:
    """Run a benchmark's child process (pinned to `cpu` unless None) and return the JSON
    object its last line of output holds; None, said on stderr, where it failed."""
    pinned = None if cpu is None else functools.partial(os.sched_setaffinity, 0, {cpu})
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, preexec_fn=pinned)
    if done.returncode != 0:
        print(f"  process {label} failed (exit {done.returncode}); left out", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])
