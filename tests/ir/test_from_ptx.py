"""Building the IR: name resolution and its errors, scopes, the CFG, golden IR text."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptxport.errors import IrVerificationError, PtxSemanticError
from ptxport.ir import nodes as ir
from ptxport.ir.from_ptx import build
from ptxport.ir.printer import print_ir
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

GOLDEN = Path(__file__).resolve().parent / "golden"


def _kernel(body: str, params: str = ".param .u64 p", extra: str = "") -> str:
    return (f".version 8.0\n.target sm_80\n.address_size 64\n{extra}\n"
            f".visible .entry k({params})\n{{\n{body}\n}}\n")


def _build(text: str) -> ir.Module:
    module = build(parse(text, "test.ptx"))
    verify(module)
    return module


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.ptx")), ids=lambda p: p.stem)
def test_golden_ir(path: Path):
    actual = print_ir(_build(path.read_text()))
    expected_path = path.with_suffix(".ir")
    if not expected_path.exists() or expected_path.read_text() != actual:
        path.with_suffix(".ir.actual").write_text(actual)
    assert expected_path.exists(), f"no golden file; the output is in {path.stem}.ir.actual"
    assert actual == expected_path.read_text(), (
        f"IR differs from {expected_path.name}; the actual output is in {path.stem}.ir.actual")


def test_nested_scopes_get_unique_names_and_calls_resolve():
    module = _build((GOLDEN / "scopes_and_cfg.ptx").read_text())
    kernel = module.functions["loop_and_call"]
    assert {"param0", "param0$1", "retval0", "retval0$1"} <= set(kernel.variables)
    calls = [i for i in kernel.instructions() if i.opcode == "call"]
    assert [c.operands[1] for c in calls] == [module.functions["square"]] * 2
    first_arg = calls[0].operands[2].elements[0]
    second_arg = calls[1].operands[2].elements[0]
    assert first_arg is kernel.variables["param0"]
    assert second_arg is kernel.variables["param0$1"]


def test_cfg_of_a_loop():
    kernel = _build((GOLDEN / "scopes_and_cfg.ptx").read_text()).functions["loop_and_call"]
    entry, loop, exit_ = kernel.blocks
    assert entry.label == "%entry" and loop.label == "$L_loop"
    assert entry.successors == [loop]
    assert loop.successors == [loop, exit_]          # taken branch first, then fall-through
    assert exit_.successors == []                    # ends in ret
    assert kernel.directives == {"maxntid": (128, 1, 1)}


def test_special_registers_and_initializers():
    module = _build((GOLDEN / "scopes_and_cfg.ptx").read_text())
    kernel = module.functions["loop_and_call"]
    tid = next(i for i in kernel.instructions() if i.opcode == "mov").operands[1]
    assert isinstance(tid, ir.SpecialRegister) and tid.text == "%tid.x"
    assert tid.type.name == "u32"
    table_ptr = module.globals["table_ptr"]
    assert table_ptr.init == [ir.SymbolAddress(module.globals["table"], 0, generic=True)]
    assert [v.value for v in module.globals["table"].init] == [1, 2, 3, 4]


def test_register_ranges_make_exactly_the_declared_registers():
    module = _build(_kernel(".reg .b32 %r<3>;\nmov.u32 %r2, 7;\nret;"))
    assert sorted(module.functions["k"].registers) == ["%r0", "%r1", "%r2"]
    with pytest.raises(PtxSemanticError, match="undefined register '%r3'"):
        _build(_kernel(".reg .b32 %r<3>;\nmov.u32 %r3, 7;\nret;"))


def test_large_register_ranges_are_made_on_first_use():
    module = _build(_kernel(".reg .b32 %r<100000>;\nmov.u32 %r99999, 7;\nret;"))
    assert list(module.functions["k"].registers) == ["%r99999"]


def test_unsized_global_takes_its_size_from_the_initializer():
    module = _build(_kernel("ret;", extra=".global .u32 a[] = {1, 2, 3};"))
    assert module.globals["a"].elements == 3 and module.globals["a"].size == 12


def test_managed_attribute_is_kept():
    module = _build(_kernel("ret;", extra=".global .attribute(.managed) .align 4 .u32 m;\n"
                                          ".global .align 4 .u32 g;"))
    assert module.globals["m"].managed and module.globals["m"].attributes == ("managed",)
    assert not module.globals["g"].managed


def test_extern_shared_is_unsized():
    module = _build(_kernel("ret;", extra=".extern .shared .align 16 .b8 dyn[];"))
    assert module.globals["dyn"].unsized and module.globals["dyn"].size == 0


@pytest.mark.parametrize(("body", "extra", "line", "column", "message"), [
    ("mov.u32 %r1, 1;\nret;", "", 7, 9, "undefined register '%r1'"),
    (".reg .b32 %r1;\nbra $nowhere;", "", 8, 5, "undefined name '$nowhere'"),
    (".reg .b32 %r1;\nld.global.u32 %r1, [missing];", "", 8, 21, "undefined name 'missing'"),
    (".reg .b32 %r1;\n@%r1 bra $L;\n$L:\nret;", "", 8, 2, "not a predicate register"),
    (".reg .b32 %r1;\n.reg .b32 %r1;", "", 8, 11, "declared twice"),
    (".reg .b32 %r1;\nmov.u32 %r1, %tid;", "", 8, 14, "needs one of .x, .y, .z"),
    (".reg .b32 %r1;\nmov.u32 %r1, %laneid.x;", "", 8, 14, "has no field '.x'"),
    ("$L:\n$L:\nret;", "", 8, 1, "label '$L' is defined twice"),
    ("ret;", ".global .u32 g;\n.global .u32 g;", 5, 14, "defined twice"),
    ("ret;", ".global .u32 g[2] = {1, 2, 3};", 4, 14, "3 values for 2 elements"),
    ("ret;", ".global .u64 p = nothing;", 4, 18, "undefined variable or function 'nothing'"),
])
def test_semantic_errors_name_what_and_where(body, extra, line, column, message):
    with pytest.raises(PtxSemanticError) as info:
        _build(_kernel(body, extra=extra))
    diagnostic = info.value.diagnostics[0]
    assert message in diagnostic.message
    assert (diagnostic.location.file, diagnostic.location.line) == ("test.ptx", line)
    assert diagnostic.location.column == column


def test_all_semantic_errors_are_reported_together():
    body = "mov.u32 %a, 1;\nmov.u32 %b, 2;\nbra $c;"
    with pytest.raises(PtxSemanticError) as info:
        _build(_kernel(body))
    assert [d.location.line for d in info.value.diagnostics] == [7, 8, 9]


def test_call_arity_is_verified():
    text = _kernel(".param .b32 a;\n.param .b32 b;\ncall.uni f, (a, b);\nret;",
                   extra=".func f(.param .b32 x)\n{\nret;\n}")
    with pytest.raises(IrVerificationError, match="f takes 1 arguments, given 2"):
        _build(text)


def test_verifier_catches_a_broken_cfg_and_a_bad_destination():
    module = _build(_kernel(".reg .b32 %r1;\nmov.u32 %r1, 1;\nret;"))
    kernel = module.functions["k"]
    kernel.blocks[0].successors.append(kernel.blocks[0])
    mov = kernel.blocks[0].instructions[0]
    kernel.blocks[0].instructions[0] = ir.Instruction(mov.spec, (ir.IntImm(3), ir.IntImm(1)))
    with pytest.raises(IrVerificationError) as info:
        verify(module)
    messages = " | ".join(d.message for d in info.value.diagnostics)
    assert "successors do not match" in messages
    assert "destination (first operand) cannot be written" in messages


def test_kernel_parameters_must_be_param_space():
    text = (".version 8.0\n.target sm_80\n.address_size 64\n"
            ".visible .entry k(.reg .u32 x)\n{\nret;\n}\n")
    with pytest.raises(PtxSemanticError, match="must be in .param space"):
        _build(text)


def test_warp_size_is_a_constant():
    module = _build(_kernel(".reg .b32 %r1;\nmov.u32 %r1, WARP_SZ;\nret;"))
    mov = next(module.functions["k"].instructions())
    assert mov.operands[1] == ir.IntImm(32)


@pytest.mark.parametrize("instruction, readable", [
    ("mov.u32 %r1, %ctaid.y;", True),
    ("cvt.u64.u32 %rd1, %tid.x;", True),
    ("mov.b64 %rd1, {%r1, %ctaid.x};", True),
    ("add.u32 %r1, %ctaid.y, 100;", False),      # ptxas: "Special register argument not
    ("cvt.rn.f32.u32 %f1, %tid.x;", False),       # allowed for instruction 'add'" (and 'cvt')
    ("setp.eq.u32 %p1, %laneid, 0;", False),
    ("st.global.u32 [%rd1], %ctaid.x;", False),
])
def test_special_registers_are_read_only_by_mov_and_integer_cvt(instruction, readable):
    body = (".reg .b32 %r<3>;\n.reg .b64 %rd<3>;\n.reg .f32 %f<2>;\n.reg .pred %p<2>;\n"
            f"{instruction}\nret;")
    if readable:
        _build(_kernel(body))
        return
    with pytest.raises(PtxSemanticError, match="special register '%[a-z]+(\\.[xyz])?' cannot be "
                                               "an operand"):
        _build(_kernel(body))
