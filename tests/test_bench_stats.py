"""benchmarks/bench_stats.py: the medians cpu_kernels.py --processes and cpu_compare.py
report (no timing here: the per-process results are made up)."""

import importlib.util
import math
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_stats.py"
_SPEC = importlib.util.spec_from_file_location("bench_stats", _PATH)
bench_stats = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_stats)


def _row(kernel, status="ok", **cores):
    return {"kernel": kernel, "size": "n=8", "blocks": 2, "status": status,
            "first_launch_ms": 100.0, "cores": cores}


def _cell(c_ms, ptxport_ms, runs=5):
    return {"c_ms": c_ms, "ptxport_ms": ptxport_ms, "ratio": ptxport_ms / c_ms, "runs": runs,
            "c_runs_ms": [c_ms], "ptxport_runs_ms": [ptxport_ms]}


def test_geomean_and_spread():
    assert bench_stats.geomean([]) is None
    assert bench_stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert bench_stats.spread([3.0, 1.0, 2.0, 6.0]) == {
        "median": 2.5, "min": 1.0, "max": 6.0, "noise": 6.0}


def test_merge_cells_takes_the_median_of_each_process_ratio():
    # ratios 2, 3, 1.5: the median ratio is 2 (process 1's), not the ratio of the median
    # times (ptxport 6 / C 2 = 3)
    cells = [_cell(1.0, 2.0), _cell(2.0, 6.0, runs=3), _cell(4.0, 6.0)]
    merged = bench_stats.merge_cells(cells)
    assert merged["ratio"] == 2.0
    assert (merged["c_ms"], merged["ptxport_ms"]) == (2.0, 6.0)
    assert (merged["ratio_min"], merged["ratio_max"], merged["noise"]) == (1.5, 3.0, 2.0)
    assert merged["runs"] == 3 and merged["processes"] == 3
    assert merged["per_process"]["ratio"] == [2.0, 3.0, 1.5]


def test_merge_cells_without_a_ratio_keeps_the_c_time():
    assert bench_stats.merge_cells([{"c_ms": 1.0}, {"c_ms": 3.0}, {}]) == {"c_ms": 2.0}
    assert bench_stats.merge_cells([{}]) == {}


def test_merge_rows_keeps_the_first_order_and_reports_failures():
    first = [_row("saxpy", **{"1": _cell(1.0, 2.0), "16": _cell(0.1, 0.1)}),
             _row("gemm", **{"1": _cell(10.0, 20.0)})]
    # a second process that ran the kernels in reverse order, gemm failing its check
    second = [_row("gemm", "mismatch: C[0]", **{"1": _cell(10.0, 40.0)}),
              _row("saxpy", **{"1": _cell(1.0, 4.0), "16": _cell(0.1, 0.3)})]
    rows = bench_stats.merge_rows([first, second])
    assert [r["kernel"] for r in rows] == ["saxpy", "gemm"]
    saxpy, gemm = rows
    assert saxpy["status"] == "ok" and saxpy["size"] == "n=8"
    assert saxpy["cores"]["1"]["ratio"] == 3.0
    assert saxpy["cores"]["16"]["ratio"] == pytest.approx(2.0)
    assert gemm["status"] == "mismatch: C[0] (in 1 of 2 processes)"
    assert gemm["cores"]["1"]["per_process"]["ratio"] == [2.0, 4.0]
    assert gemm["first_launch_ms"] == 100.0


def test_merge_rows_of_a_kernel_that_failed_everywhere():
    rows = bench_stats.merge_rows([[_row("scan", "unsupported: x", **{"1": {"c_ms": 2.0}})],
                                   [_row("scan", "unsupported: x", **{"1": {"c_ms": 4.0}})]])
    assert rows[0]["status"] == "unsupported: x"
    assert rows[0]["cores"] == {"1": {"c_ms": 3.0}}


def test_process_geomeans_and_noisiest():
    runs = [[_row("a", **{"1": _cell(1.0, 2.0)}), _row("b", **{"1": _cell(1.0, 8.0)})],
            [_row("a", **{"1": _cell(1.0, 1.0)}), _row("b", "failed: x", **{"1": {}})]]
    means = bench_stats.process_geomeans(runs, [1, 16])
    assert means["1"]["per_process"] == pytest.approx([4.0, 1.0])
    assert means["1"]["noise"] == pytest.approx(4.0)
    assert means["16"] == {"per_process": []}
    rows = bench_stats.merge_rows(runs)
    assert bench_stats.noisiest(rows, "1") == (2.0, "a")
    assert bench_stats.noisiest(rows, "16") is None


def test_paired_changes():
    # round by round: this / other of the ratios to C, the median of those
    change = bench_stats.paired_change([2.0, 4.0, 3.0], [1.0, 3.0, 3.3])
    assert change["median"] == pytest.approx(0.75)
    assert change["min"] == pytest.approx(0.5) and change["max"] == pytest.approx(1.1)
    assert math.isclose(change["noise"], 2.2)


def test_block_order_alternates_which_side_goes_first():
    assert bench_stats.block_order(3) == [("c", "ptxport"), ("ptxport", "c"),
                                          ("c", "ptxport")]
    assert bench_stats.block_order(1) == [("c", "ptxport")]


def test_cpu_ranges():
    assert bench_stats.cpu_ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert bench_stats.cpu_ranges([3]) == "3"
    assert bench_stats.cpu_ranges([]) == ""


def test_merge_cells_takes_the_median_of_optional_fields_where_present():
    # scan_blelloch's cells carry its own algorithm's C time (cpu_kernels.py's c_tree); the
    # other kernels' cells do not, and get no such field
    cells = [dict(_cell(1.0, 2.0), c_tree_ms=4.0, tree_ratio=0.5),
             dict(_cell(2.0, 6.0), c_tree_ms=3.0, tree_ratio=2.0), _cell(4.0, 6.0)]
    merged = bench_stats.merge_cells(cells)
    assert (merged["c_tree_ms"], merged["tree_ratio"]) == (3.5, 1.25)
    assert merged["per_process"]["tree_ratio"] == [0.5, 2.0]
    assert "c_tree_ms" not in bench_stats.merge_cells([_cell(1.0, 2.0)])


def _scaling_row(kernel, size, **workers):
    return {"kernel": kernel, "size": size, "blocks": 4, "status": "ok",
            "workers": {k.lstrip("w"): v for k, v in workers.items()}}


def _scaling_cell(c_ms, ptxport_ms, busy_us=None):
    cell = {"c_ms": c_ms, "ptxport_ms": ptxport_ms, "ratio": ptxport_ms / c_ms, "runs": 6}
    if busy_us is not None:
        cell.update(late_us=2.0, idle=0.1, gap_ms=0.2, busy_us=busy_us, outside_us=50.0)
    return cell


def test_merge_scaling_takes_efficiency_from_median_times():
    # three processes of two sizes of one kernel: 1 and 4 workers; the same kernel name
    # twice stays two rows (keyed by size too)
    runs = [[_scaling_row("saxpy", "n=8", w1=_scaling_cell(2.0, 8.0, busy_us=7000.0),
                          w4=_scaling_cell(1.0, 4.0, busy_us=14000.0)),
             _scaling_row("saxpy", "n=16", w1=_scaling_cell(4.0, 16.0))]
            for _ in range(2)]
    runs.append([_scaling_row("saxpy", "n=8", w1=_scaling_cell(4.0, 16.0, busy_us=9000.0),
                              w4=_scaling_cell(0.5, 1.0, busy_us=18000.0)),
                 _scaling_row("saxpy", "n=16", w1=_scaling_cell(4.0, 16.0))])
    rows = bench_stats.merge_scaling(runs)
    assert [(r["kernel"], r["size"]) for r in rows] == [("saxpy", "n=8"), ("saxpy", "n=16")]
    four = rows[0]["workers"]["4"]
    assert four["ptxport_ms"] == 4.0 and four["c_ms"] == 1.0
    # median one-worker 8.0 ms over 4 x median 4.0 ms, not the median of 0.5, 0.5, 4.0
    assert four["ptxport_efficiency"] == pytest.approx(0.5)
    assert four["ptxport_efficiency_min"] == pytest.approx(0.5)
    assert four["ptxport_efficiency_max"] == pytest.approx(4.0)
    assert four["c_efficiency"] == pytest.approx(0.5)
    assert four["c_efficiency_min"] == pytest.approx(0.5)
    assert four["c_efficiency_max"] == pytest.approx(2.0)
    assert four["work"] == pytest.approx(14000.0 / 7000.0)
    assert four["late_us"] == 2.0 and four["processes"] == 3
    assert rows[0]["workers"]["1"]["ptxport_efficiency"] == pytest.approx(1.0)
    assert "ptxport_efficiency" not in rows[1]["workers"].get("4", {})


def test_merge_scaling_joins_a_process_split_by_pinning():
    # a pinned one-worker part and an unpinned part of another process lack each other's
    # counts: efficiency pairs only processes that have both
    runs = [[_scaling_row("gemm", "8", w1=_scaling_cell(2.0, 4.0))],
            [_scaling_row("gemm", "8", w4=_scaling_cell(1.0, 2.0))],
            [dict(_scaling_row("gemm", "8", w1=_scaling_cell(2.0, 4.0),
                               w4=_scaling_cell(1.0, 1.0)), status="mismatch: y")]]
    row = bench_stats.merge_scaling(runs)[0]
    assert row["status"] == "mismatch: y (in 1 of 3 processes)"
    four = row["workers"]["4"]
    assert four["ptxport_efficiency"] == pytest.approx(4.0 / (4 * 1.5))
    assert four["ptxport_efficiency_min"] == four["ptxport_efficiency_max"] == 1.0


def _block(side, round_number, ms, probes, warm=(), workers=None):
    block = {"side": side, "round": round_number, "ms": list(ms), "warm_ms": list(warm),
             "probe_ms": list(probes)}
    if workers is not None:
        block["workers"] = workers
    return block


def test_probe_ms_times_plain_work():
    # the least of the repeats, in ms: 40x the loops take longer (each the least of 3, so
    # that one interrupted repeat does not decide it)
    short, long = bench_stats.probe_ms(1000, 3), bench_stats.probe_ms(40_000, 3)
    assert 0 < short < long


def test_agree_is_a_symmetric_tolerance_on_the_probes():
    assert bench_stats.agree([2.0, 2.2, 2.1], 0.15)
    assert bench_stats.agree([2.2, 2.0], 0.10) and bench_stats.agree([2.0, 2.2], 0.10)
    assert not bench_stats.agree([2.0, 2.31], 0.15)
    assert not bench_stats.agree([], 0.15)


def _is_c(block):
    return block["side"] == "c"


def _is_ptxport(block):
    return block["side"] == "ptxport"


def test_phase_fields_keep_only_rounds_whose_probes_agree():
    # round 0: C 1.0 ms then ptxport 2.0, probes 2.0 2.1 2.0 (same phase): ratio 2;
    # round 1: ptxport 3.0 then C 1.0, its second block in a slow phase (probe 3.0): left out;
    # round 2: C 2.0 (two runs, median 2.0) then ptxport 5.0, probes agree: ratio 2.5
    blocks = [_block("c", 0, [1.0], [2.0, 2.1]), _block("ptxport", 0, [2.0], [2.1, 2.0]),
              _block("ptxport", 1, [3.0], [2.0, 2.1]), _block("c", 1, [1.0], [2.1, 3.0]),
              _block("c", 2, [1.5, 2.5], [3.0, 3.1]), _block("ptxport", 2, [5.0], [3.1, 3.0])]
    pairs = bench_stats.phase_pairs(blocks, _is_c, _is_ptxport)
    assert pairs == [(1.0, 2.0, True), (1.0, 3.0, False), (2.0, 5.0, True)]
    fields = bench_stats.phase_fields(blocks, _is_c, _is_ptxport)
    assert (fields["pairs"], fields["matched"]) == (3, 2)
    assert fields["matched_ratio"] == pytest.approx(2.25)
    # probes beside C's blocks 2.0 2.1 2.1 3.0 3.0 3.1 (median 2.55), ptxport's
    # 2.1 2.0 2.0 2.1 3.1 3.0 (median 2.1)
    assert fields["probe_ratio"] == pytest.approx(2.1 / 2.55)


def test_phase_fields_without_matched_pairs_has_no_matched_ratio():
    blocks = [_block("c", 0, [1.0], [2.0, 3.0]), _block("ptxport", 0, [2.0], [3.0, 3.0]),
              _block("c", 1, [1.0], [2.0, 2.0])]    # (round 1 lacks ptxport's block)
    fields = bench_stats.phase_fields(blocks, _is_c, _is_ptxport, prefix="x_")
    assert fields == {"x_probe_ratio": pytest.approx(3.0 / 2.0), "x_pairs": 1,
                      "x_matched": 0}


def test_phase_fields_of_efficiency_pairs():
    # cpu_scaling.py: ptxport's one-worker block against its 4-worker one per round
    blocks = [_block("ptxport", 0, [8.0], [1.0, 1.0], workers=1),
              _block("ptxport", 0, [4.0], [1.0, 1.05], workers=4),
              _block("ptxport", 1, [4.0], [1.0, 1.0], workers=4),
              _block("ptxport", 1, [8.0], [1.6, 1.6], workers=1)]
    fields = bench_stats.phase_fields(
        blocks, lambda b: b["workers"] == 1, lambda b: b["workers"] == 4, "eff_",
        lambda one, many: one / (4 * many))
    assert (fields["eff_pairs"], fields["eff_matched"]) == (2, 1)
    assert fields["eff_matched_ratio"] == pytest.approx(0.5)


def test_phase_levels_and_warm_fields():
    cells = [{"blocks": [_block("c", 0, [1.0], [2.0, 2.0], warm=[3.0, 1.1])]},
             {"blocks": [_block("c", 0, [2.0, 2.0], [3.0, 3.2], warm=[2.0])]}, {}]
    bench_stats.phase_levels(cells)
    assert cells[0]["phase"] == 1.0 and cells[1]["phase"] == pytest.approx(1.55)
    assert "phase" not in cells[2]
    blocks = cells[0]["blocks"] + cells[1]["blocks"] + [_block("c", 1, [1.0], [2.0, 2.0])]
    # first warm-up runs over the timed medians 3.0 and 1.0, last ones 1.1 and 1.0
    assert bench_stats.warm_fields(blocks) == {"cold": pytest.approx(2.0),
                                               "warm": pytest.approx(1.05)}
    assert bench_stats.warm_fields([_block("c", 0, [1.0], [1.0, 1.0])]) == {}


def test_merge_cells_merges_the_phase_columns():
    cells = [dict(_cell(1.0, 2.0), probe_ratio=1.0, pairs=3, matched=2, matched_ratio=1.8,
                  phase=1.0),
             dict(_cell(1.0, 3.0), probe_ratio=1.5, pairs=3, matched=0, phase=1.6),
             dict(_cell(1.0, 2.5), probe_ratio=1.1, pairs=3, matched=3, matched_ratio=2.4,
                  phase=1.1)]
    merged = bench_stats.merge_cells(cells)
    assert merged["probe_ratio"] == 1.1 and merged["phase"] == 1.1
    # the median over the processes that matched any pair; the pairs summed
    assert merged["matched_ratio"] == pytest.approx(2.1)
    assert merged["per_process"]["matched_ratio"] == [1.8, 2.4]
    assert (merged["pairs"], merged["matched"]) == (9, 5)
    assert "pairs" not in bench_stats.merge_cells([_cell(1.0, 2.0)])
