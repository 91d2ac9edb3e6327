"""Medians over several benchmark processes: the statistics cpu_kernels.py --processes and
cpu_compare.py share (no ptxport or numpy here, so tests/test_bench_stats.py checks them
without timing anything), and the clock probe the benchmarks time beside each block with the
phase columns made of it (see "the host's phases" below).

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
import time
from collections.abc import Callable, Iterable


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
# The host's phases (phase_fields, phase_levels, warm_fields; cpu_scaling.py's efficiency
# pairs with "eff_"): medians over the processes that have them, of "matched_ratio" too (a
# process none of whose pairs matched has none); the pair counts summed.
_PHASE_FIELDS = ("probe_ratio", "matched_ratio", "phase", "cold", "warm",
                 "eff_probe_ratio", "eff_matched_ratio", "c_eff_probe_ratio",
                 "c_eff_matched_ratio")
_PHASE_COUNTS = ("pairs", "matched", "eff_pairs", "eff_matched", "c_eff_pairs",
                 "c_eff_matched")


def merge_cells(cells: list[dict]) -> dict:
    """One kernel's cells at one core count, one per process (cpu_kernels.py's
    {"c_ms", "ptxport_ms", "ratio", "runs", ...}), as one cell: the medians of c_ms,
    ptxport_ms and ratio; "runs" the fewest any process timed; the per-process values in
    "per_process"; the ratio's min, max and noise; the phase columns' medians and pair
    counts' sums (_PHASE_FIELDS, _PHASE_COUNTS). Cells without a ratio (a kernel not run)
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
    for name in _OPTIONAL_FIELDS + _PHASE_FIELDS:
        values = [c[name] for c in timed if name in c]
        if values:
            merged[name] = statistics.median(values)
            merged["per_process"][name] = values
    for name in _PHASE_COUNTS:
        if any(name in c for c in timed):
            merged[name] = sum(c.get(name, 0) for c in timed)
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


# --- the host's phases -------------------------------------------------------------------------
#
# The GPU host's single cores run in slow and fast phases: core-bound code 1.5-1.6x slower in
# a slow one, within one process too, C's gemm 1.1-1.24x (session 12, cpu_gemm_modes.py:
# docs/cpu-target-measurements.md "Session 12: gemm9"). A fixed loop of plain Python work on
# the calling thread (probe_ms) tracked gemm's one-core mode there (correlation 0.86). The
# benchmarks time it beside each timed block -- before and after it, the probe after one
# block being the one before the next -- and keep it with the block: a block is a dict
# {"side": "c" | "ptxport", "round": r, "ms": [timed runs], "warm_ms": [untimed runs before
# them], "probe_ms": [before, after]} (cpu_scaling.py's also "workers"). Two blocks ran in the
# same phase where all four of their probes (three for adjacent blocks) lie within
# PHASE_TOLERANCE of each other (max / min - 1): a rule on the probes alone, the same for both
# sides, so a pair is kept or left out whatever its times.

PROBE_LOOPS = 20_000        # about 0.6 ms of CPython on the development machine
PROBE_REPEATS = 3           # the least of 3: a probe the OS interrupted reads long
PHASE_TOLERANCE = 0.15      # the phases differ by 1.5x; the probe's own spread is a few %


def probe_ms(loops: int = PROBE_LOOPS, repeats: int = PROBE_REPEATS) -> float:
    """The clock probe: ms of `loops` iterations of plain Python work on this thread, the
    least of `repeats` (cpu_gemm_modes.py's probe, once 200,000 loops). A slow phase slows
    every repeat; a repeat that another thread or process interrupted (on the development
    machine single probes of 1.5 ms read 5-10 ms now and then) does not make the probe."""
    best = math.inf
    for _ in range(repeats):
        start, total = time.perf_counter(), 0
        for i in range(loops):
            total += i
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def agree(probes: Iterable[float], tolerance: float = PHASE_TOLERANCE) -> bool:
    """Whether the probes lie within `tolerance` of each other (max / min - 1)."""
    probes = list(probes)
    return bool(probes) and max(probes) <= min(probes) * (1 + tolerance)


def phase_pairs(blocks: list[dict], first: Callable[[dict], bool],
                second: Callable[[dict], bool], tolerance: float = PHASE_TOLERANCE) \
        -> list[tuple[float, float, bool]]:
    """Per round of `blocks`, its first block that `first` selects and its first that
    `second` selects, as (the first's median ms, the second's, whether the two blocks ran in
    the same phase: agree() over both blocks' probes); rounds lacking either are skipped."""
    rounds: dict[int, list[dict]] = {}
    for block in blocks:
        rounds.setdefault(block["round"], []).append(block)
    pairs = []
    for _, group in sorted(rounds.items()):
        one = next((b for b in group if first(b) and b["ms"]), None)
        two = next((b for b in group if second(b) and b["ms"]), None)
        if one and two:
            pairs.append((statistics.median(one["ms"]), statistics.median(two["ms"]),
                          agree(one["probe_ms"] + two["probe_ms"], tolerance)))
    return pairs


def phase_fields(blocks: list[dict], first: Callable[[dict], bool],
                 second: Callable[[dict], bool], prefix: str = "",
                 value: Callable[[float, float], float] = lambda a, b: b / a,
                 tolerance: float = PHASE_TOLERANCE) -> dict:
    """One process's phase columns for the blocks `first` and `second` select (by default
    C's and ptxport's at one core count): "probe_ratio", the median probe of second's blocks
    over that of first's (about 1: the two sides ran in the same phase on the whole);
    "pairs", the rounds with both, and "matched", those of them whose probes agree
    (phase_pairs); and where any matched, "matched_ratio": the median over the matched
    pairs of value(first's ms, second's ms), by default second / first (ptxport / C). The
    keys get `prefix`."""
    probes = {name: [p for b in blocks if pick(b) for p in b["probe_ms"]]
              for name, pick in (("first", first), ("second", second))}
    out: dict = {}
    if probes["first"] and probes["second"]:
        out["probe_ratio"] = statistics.median(probes["second"]) / \
            statistics.median(probes["first"])
    pairs = phase_pairs(blocks, first, second, tolerance)
    matched = [value(a, b) for a, b, same in pairs if same]
    out.update(pairs=len(pairs), matched=len(matched))
    if matched:
        out["matched_ratio"] = statistics.median(matched)
    return {prefix + key: v for key, v in out.items()}


def phase_levels(cells: Iterable[dict]) -> None:
    """Each cell's "phase", in place: the median of its blocks' probes over the least probe
    of all `cells` (one process's): about 1 in the process's fastest phase, 1.5 in a slow
    one."""
    cells = [c for c in cells if c.get("blocks")]
    probes = [p for c in cells for b in c["blocks"] for p in b["probe_ms"]]
    if not probes:
        return
    least = min(probes)
    for cell in cells:
        cell["phase"] = statistics.median(p for b in cell["blocks"] for p in b["probe_ms"]) \
            / least


def warm_fields(blocks: list[dict]) -> dict:
    """Whether the blocks' warm-up warmed the caches: over the blocks that had warm-up runs,
    the median of the first warm-up run's time over the block's median timed run ("cold":
    how much slower the block began) and of the last warm-up run's ("warm": about 1 where the
    warm-up had reached the timed runs' speed)."""
    warmed = [b for b in blocks if b.get("warm_ms") and b["ms"]]
    if not warmed:
        return {}
    return {"cold": statistics.median(b["warm_ms"][0] / statistics.median(b["ms"])
                                      for b in warmed),
            "warm": statistics.median(b["warm_ms"][-1] / statistics.median(b["ms"])
                                      for b in warmed)}
