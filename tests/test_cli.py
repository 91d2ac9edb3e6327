"""`ptxport inspect`: exit codes, error format, the JSON report's schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptxport.cli import main
from ptxport.inspection import SCHEMA

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_PTX = ROOT / "tests" / "ir" / "golden" / "scopes_and_cfg.ptx"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_ptx_text(capsys):
    code, out, err = run(capsys, "inspect", str(GOLDEN_PTX))
    assert code == 0 and err == ""
    assert "kernel loop_and_call" in out
    assert "param out: u64, 8 bytes, align 8, pointer (converted with cvta)" in out
    assert "param n: u32, 4 bytes, align 4, value" in out
    assert "directives: maxntid 128,1,1" in out
    assert "target cpu:" in out


def test_inspect_json_schema(capsys):
    code, out, _ = run(capsys, "inspect", "--json", str(GOLDEN_PTX))
    assert code == 0
    report = json.loads(out)
    assert report["schema"] == SCHEMA
    assert report["ptx_version"] == "8.0" and report["target"] == ["sm_80"]
    kernel = next(f for f in report["functions"] if f["name"] == "loop_and_call")
    assert kernel["kind"] == "kernel" and kernel["line"] == 20
    assert [(p["name"], p["type"], p["size"], p["pointer"]) for p in kernel["parameters"]] == [
        ("out", "u64", 8, True), ("n", "u32", 4, False)]
    assert kernel["registers"]["by_type"] == {"b32": 6, "b64": 4, "pred": 2}
    assert kernel["census"]["control flow"] == 4          # 2 calls, 1 bra, 1 ret
    assert kernel["opcodes"]["call"] == 2
    square = next(f for f in report["functions"] if f["name"] == "square")
    assert square["kind"] == "function" and square["returns"][0]["name"] == "ret"
    assert sum(report["census"].values()) == kernel["instructions"] + square["instructions"]
    for target in ("cpu", "nvptx", "amdgpu", "spirv"):
        info = report["targets"][target]
        lines = [line for e in info["unsupported"] for line in e["lines"]]
        assert info["unsupported_count"] == len(lines)
    assert report["globals"][0] == {
        "name": "table", "space": "global", "type": "u32", "elements": 4, "size": 16,
        "align": 4, "linkage": [], "extern": False, "initialized": True}


def test_inspect_cuda_source(capsys):
    code, out, _ = run(capsys, "inspect", "--json", str(ROOT / "examples" / "saxpy.cu"))
    assert code == 0
    report = json.loads(out)
    assert report["source_kind"] == "cuda"
    names = [f["name"] for f in report["functions"]]
    assert names == ["saxpy", "block_sum"]
    block_sum = report["functions"][1]
    assert block_sum["static_shared_bytes"] == 128


def test_errors_are_file_line_col_and_exit_1(capsys, tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                   ".visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n\tadd.s32 %r1, %r2;\n}\n")
    code, out, err = run(capsys, "inspect", str(bad))
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"{bad}:6:2: error: unknown instruction 'frobnicate'")
    assert lines[1].startswith(f"{bad}:7:2: error: 'add.s32' takes 3 operands, found 2")


def test_semantic_errors_exit_1(capsys, tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                   ".visible .entry k()\n{\n\tmov.u32 %r1, 1;\n}\n")
    code, _, err = run(capsys, "inspect", str(bad))
    assert code == 1
    assert err.startswith(f"{bad}:6:10: error: undefined register '%r1'")


def test_cuda_compile_errors_exit_1(capsys, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void k() { int x = ; }\n')
    code, _, err = run(capsys, "inspect", str(bad))
    assert code == 1 and "bad.cu" in err and "expected an expression" in err


@pytest.mark.parametrize("argv", [
    ("inspect",), ("inspect", "/no/such/file.ptx"), ("frobnicate",), ("inspect", "--bogus", "x"),
])
def test_usage_errors_exit_2(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and err


def test_not_ptx_or_cuda_is_a_usage_error(capsys, tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    code, _, err = run(capsys, "inspect", str(other))
    assert code == 2 and "neither a .ptx nor a .cu" in err


def test_devices_lists_the_cpu_and_why_other_backends_are_absent(capsys):
    code, out, _ = run(capsys, "devices")
    assert code == 0
    assert out.startswith("cpu:0: ") or "\ncpu:0: " in out
    assert "cuda: absent: " in out


def test_devices_json(capsys):
    code, out, _ = run(capsys, "devices", "--json")
    report = json.loads(out)
    cpu = [d for d in report["devices"] if d["device"] == "cpu:0"]
    assert code == 0 and cpu and cpu[0]["warp_size"] == 32
    assert cpu[0]["unified_addressing"] is True
    assert set(report["absent_backends"]) >= {"cuda", "hip"}


def test_a_reader_that_goes_away_is_no_traceback(tmp_path):
    # `ptxport inspect --json FILE | head -1`: the pipe closes while ptxport still writes (the
    # report of 400 kernels is larger than a pipe holds, so ptxport's writes do fail)
    import subprocess
    import sys

    kernel = "\n.visible .entry k{}(.param .u64 p)\n{{\n    ret;\n}}\n"
    source = tmp_path / "many.ptx"
    source.write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                      + "".join(kernel.format(i) for i in range(400)))
    child = subprocess.Popen([sys.executable, "-m", "ptxport.cli", "inspect", "--json",
                              str(source)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=ROOT)
    assert child.stdout.readline().strip() == b"{"
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


PASS_INPUT = ROOT / "tests" / "passes" / "golden" / "waiting_call.ptx"


def test_inspect_dump_after_a_pass_prints_its_golden_dump(capsys):
    code, out, err = run(capsys, "inspect", str(PASS_INPUT), "--dump-after", "plan-waits")
    assert code == 0 and err == ""
    assert out == PASS_INPUT.with_name("waiting_call.plan-waits.txt").read_text()


@pytest.mark.parametrize(("argv", "message"), [
    (("--dump-after", "vectorize"), "no pass named 'vectorize'"),
    (("--dump-after", "inline", "--kernel", "nope"), "no kernel named 'nope'"),
])
def test_inspect_dump_after_names_what_is_wrong(capsys, argv, message):
    code, out, err = run(capsys, "inspect", str(PASS_INPUT), *argv)
    assert code == 2 and out == "" and message in err
