"""`ptxport inspect` and `ptxport compile` name the user's file and line first, then the PTX
place, for each instruction a target cannot compile, where the PTX has line information
(`.file`/`.loc`), as runtime errors do; without it, the PTX place alone."""

from __future__ import annotations

import json

from test_cli import run

# %pm0/%pm1 (performance counters): no OpenCL equivalent. The first has no .loc before it.
PTX = """.version 8.0
.target sm_80
.address_size 64
.file 1 "/home/user/counters.cu"
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<3>; .reg .b64 %rd<2>;
    mov.u32 %r1, %pm0;
    .loc 1 42 7
    mov.u32 %r2, %pm1;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def _ptx(tmp_path):
    path = tmp_path / "counters.ptx"
    path.write_text(PTX)
    return path


def test_compile_names_the_source_line_first(capsys, tmp_path):
    path = _ptx(tmp_path)
    code, _, err = run(capsys, "compile", str(path), "--target", "spirv",
                       "-o", str(tmp_path / "k.spv"))
    assert code == 1
    first, second = err.strip().splitlines()
    assert first.startswith(f"{path}:8:")                  # no line information: PTX only
    assert second.startswith(f"counters.cu:42 (PTX {path}:10:")
    assert "error: 'mov.u32' is not supported on target spirv" in second


def test_inspect_names_the_source_line_first(capsys, tmp_path):
    path = _ptx(tmp_path)
    code, out, _ = run(capsys, "inspect", "--json", str(path))
    assert code == 0
    entry, = json.loads(out)["targets"]["spirv"]["unsupported"]
    assert entry["lines"] == [8, 10]
    assert entry["source_lines"] == [None, {"file": "counters.cu", "line": 42}]
    code, out, _ = run(capsys, "inspect", str(path))
    assert "  mov.u32: line 8, counters.cu:42 (PTX line 10)" in out.splitlines()


def test_inspect_without_line_information_lists_ptx_lines(capsys, tmp_path):
    path = tmp_path / "plain.ptx"
    path.write_text(PTX.replace("    .loc 1 42 7\n", ""))
    code, out, _ = run(capsys, "inspect", str(path))
    assert "  mov.u32: line 8, 9" in out.splitlines()
