"""The NVPTX target (ptxport.codegen.targets.nvptx): ptxas must accept what it makes of the
whole kernel corpus for sm_80 and sm_90, and key operations must come out as the PTX
instructions they are (barriers, warp shuffles, shared-memory accesses, atomics, the kernel
parameter ABI).

ptxas is the nvidia-cuda-nvcc wheel's (tests/corpus.py), run in a small thread pool while
LLVM compiles the next file; its acceptances are cached on disk by ptxas_errors, keyed by
the PTX, so an unchanged code generator re-assembles nothing.
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from corpus import ARCHS, corpus_ptx, corpus_sources, ptxas_errors, ptxas_path
from cpu_harness import kernel_ptx
from ptxport.codegen import support
from ptxport.codegen.targets.nvptx import compile_module
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

needs_ptxas = pytest.mark.skipif(ptxas_path() is None,
                                 reason="no ptxas: pip install nvidia-cuda-nvcc")
needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC is needed for the corpus's PTX")


def _module(ptx: str, name: str = "t.ptx"):
    module = build(parse(ptx, name))
    verify(module)
    return module


# --- the corpus through ptxas -----------------------------------------------------------------

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ptxas")
_ASSEMBLED: dict[tuple[str, str], Future] = {}


def _assembled(path: Path, arch: str) -> Future:
    """ptxas's verdict on ptxport's PTX of `path` for `arch`. The first call compiles every
    corpus file for every architecture and queues them all, so that ptxas works while the
    rest compile and while the tests wait."""
    if not _ASSEMBLED:
        for source in corpus_sources():
            for a in ARCHS:
                try:
                    ptx = compile_module(_module(corpus_ptx(source, a), source.name), a)
                except Exception as e:  # reported by that file's own test
                    failed: Future = Future()
                    failed.set_exception(e)
                    _ASSEMBLED[(source.name, a)] = failed
                    continue
                _ASSEMBLED[(source.name, a)] = _POOL.submit(_verdict, ptx, a, source)
    return _ASSEMBLED[(path.name, arch)]


def _verdict(ptx: str, arch: str, source: Path) -> str:
    errors = ptxas_errors(ptx, arch)
    if errors:  # keep the PTX where it can be read
        actual = Path(__file__).with_name(f"{source.stem}.{arch}.nvptx.actual")
        actual.write_text(ptx)
        errors += f"\n(ptxport's PTX is in {actual})"
    return errors


@needs_ptxas
@needs_nvrtc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("path", corpus_sources(), ids=lambda p: p.name)
def test_ptxas_accepts_the_corpus(path, arch):
    errors = _assembled(path, arch).result()
    assert errors == "", f"ptxas -arch={arch} refused ptxport's PTX of {path.name}:\n{errors}"


# --- golden checks: what key operations become ---------------------------------------------------

def _compile(body: str, params: str = ".param .u64 out", extra: str = "",
             arch: str = "sm_80", target: str = "sm_80", version: str = "8.0") -> str:
    ptx = compile_module(_module(kernel_ptx(body, params, extra, target, version)), arch)
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, arch) == "", ptx
    return ptx


def _instructions(ptx: str) -> list[str]:
    """The instructions of the output, one per line, without the inline-asm markers."""
    return [line.strip() for line in ptx.splitlines()
            if line.strip() and not line.strip().startswith(("//", "."))]


REGS = (".reg .b16 %rs<4>; .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .f32 %f<16>; "
        ".reg .pred %p<8>;\n")
SHARED = ".shared .align 4 .b8 smem[1024];"


def _store_r1(extra: str = "") -> str:
    return (f"{extra}ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n"
            "st.global.u32 [%rd2], %r1;\nret;")


def test_bar_sync_becomes_bar_sync():
    ptx = _compile(REGS + "bar.sync 0;\nbar.sync 1, 64;\nbarrier.sync 2;\nmov.u32 %r1, 0;\n"
                   + _store_r1())
    text = "\n".join(_instructions(ptx))
    assert re.search(r"\bbar\.sync\s+0;", text)
    assert re.search(r"\bbar\.sync\s+1, 64;", text)
    assert re.search(r"\bbarrier\.sync\s+2;", text)


def test_constant_memory_is_read_at_run_time():
    """The host may write `__constant__` variables (cudaMemcpyToSymbol) after compiling, so
    their loads are never folded to the initializer, zero or not (an LLVM `constant` global
    would let it fold them: on the H100 a struct's field read at a fixed offset became 0)."""
    extra = (".const .align 4 .b8 c_poly[20];\n"
             ".const .align 4 .u32 c_init[2] = {7, 9};\n")
    ptx = _compile(REGS + "ld.const.u32 %r2, [c_poly+16];\nld.const.u32 %r3, [c_init+4];\n"
                   "add.u32 %r1, %r2, %r3;\n" + _store_r1(), extra=extra)
    text = "\n".join(_instructions(ptx))
    assert re.search(r"\bld\.const\.[ub]32\s+%r\d+, \[c_poly\+16\];", text), ptx
    assert re.search(r"\bld\.const\.[ub]32\s+%r\d+, \[c_init\+4\];", text), ptx


def test_warp_operations_become_their_sync_instructions():
    ptx = _compile(REGS + "mov.u32 %r2, %laneid;\n"
                   "shfl.sync.bfly.b32 %r3|%p1, %r2, 1, 31, -1;\n"
                   "shfl.sync.down.b32 %r4, %r3, 2, 31, -1;\n"
                   "shfl.sync.up.b32 %r5, %r4, 4, 0, -1;\n"
                   "shfl.sync.idx.b32 %r6, %r5, 7, 31, -1;\n"
                   "setp.ne.s32 %p2, %r6, 0;\n"
                   "vote.sync.ballot.b32 %r7, %p2, -1;\n"
                   "vote.sync.any.pred %p3, %p1, -1;\n"
                   "selp.u32 %r8, 1, 0, %p3;\n"
                   "activemask.b32 %r9;\n"
                   "match.any.sync.b32 %r10, %r6, -1;\n"
                   "redux.sync.add.u32 %r11, %r7, -1;\n"
                   "add.s32 %r1, %r7, %r8;\nadd.s32 %r1, %r1, %r9;\nadd.s32 %r1, %r1, %r10;\n"
                   "add.s32 %r1, %r1, %r11;\n" + _store_r1())
    text = "\n".join(_instructions(ptx))
    for instruction in ("shfl.sync.bfly.b32", "shfl.sync.down.b32", "shfl.sync.up.b32",
                        "shfl.sync.idx.b32", "vote.sync.ballot.b32", "vote.sync.any.pred",
                        "activemask.b32", "match.any.sync.b32", "redux.sync.add"):
        assert instruction in text, instruction
    assert "%laneid" in text


def test_shared_accesses_are_ld_shared_and_st_shared():
    """Explicit .shared accesses keep their space; an access through the generic address of
    a shared variable becomes ld.shared once LLVM infers its address space."""
    ptx = _compile(REGS + "mov.u32 %r2, %tid.x;\nshl.b32 %r3, %r2, 2;\n"
                   "mov.u32 %r4, smem;\nadd.s32 %r5, %r4, %r3;\n"
                   "st.shared.u32 [%r5], %r2;\nbar.sync 0;\nld.shared.u32 %r6, [%r5+4];\n"
                   "ld.u32 %r7, [smem+8];\nadd.s32 %r1, %r6, %r7;\n" + _store_r1(),
                   extra=SHARED)
    text = "\n".join(_instructions(ptx))
    assert re.search(r"st\.shared\.[bu]32\s+\[%rd\d+\]", text), text
    assert re.search(r"ld\.shared\.[bu]32\s+%r\d+, \[%rd\d+\+4\]", text), text
    assert re.search(r"ld\.shared\.[bu]32\s+%r\d+, \[smem\+8\]", text), text
    assert not re.search(r"\bld\.[bu]32", text), "a generic load was left"


def test_dynamic_shared_memory_is_an_extern_shared_array():
    ptx = _compile(REGS + "mov.u32 %r2, dyn;\nld.shared.u32 %r1, [%r2+12];\n" + _store_r1(),
                   extra=".extern .shared .align 16 .b8 dyn[];")
    assert re.search(r"\.extern \.shared \.align 16 \.b8 dyn\[\];", ptx)
    assert "ld.shared" in ptx


def test_atomics_keep_their_space_scope_and_type():
    ptx = _compile(REGS + "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n"
                   "atom.global.add.u32 %r1, [%rd2], 1;\n"
                   "atom.global.cta.add.f32 %f1, [%rd2+4], 0f3F800000;\n"
                   "red.global.max.s32 [%rd2+8], %r1;\n"
                   "mov.u32 %r2, smem;\natom.shared.cas.b32 %r3, [%r2], %r1, 5;\n"
                   "st.global.u32 [%rd2+12], %r3;\nret;", extra=SHARED)
    text = "\n".join(_instructions(ptx))
    assert re.search(r"atom\.global\.add\.u32 %r\d+, \[%rd\d+\], 1;", text), text
    assert "atom.global.cta.add.f32" in text
    assert "red.global.max.s32" in text
    assert re.search(r"atom\.shared\.cas\.b32 %r\d+, \[%r\d+\], %r\d+, 5;", text), text


def test_floating_point_modes_pass_through_as_written():
    """The forms the CPU target emulates reach the GPU as themselves."""
    ptx = _compile(REGS + "ld.param.u64 %rd1, [out];\nld.global.f32 %f1, [%rd1];\n"
                   "add.rz.ftz.f32 %f2, %f1, 0f3F800000;\nsin.approx.f32 %f3, %f2;\n"
                   "ex2.approx.ftz.f32 %f4, %f3;\nfma.rm.f32 %f5, %f4, %f1, %f2;\n"
                   "cvt.rni.s32.f32 %r1, %f5;\ncvt.rn.f16.f32 %rs1, %f5;\n"
                   "cvt.u32.u16 %r2, %rs1;\nadd.s32 %r1, %r1, %r2;\n"
                   "st.global.u32 [%rd1], %r1;\nret;")
    for text in ("add.rz.ftz.f32", "sin.approx.f32", "ex2.approx.ftz.f32", "fma.rm.f32",
                 "cvt.rni.s32.f32", "cvt.rn.f16.f32"):
        assert re.search(re.escape(text) + r" %", ptx), text


def test_vector_loads_stay_vector_loads():
    ptx = _compile(REGS + "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n"
                   "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2];\n"
                   "st.global.v4.f32 [%rd2+16], {%f4, %f3, %f2, %f1};\nret;")
    assert re.search(r"ld\.global\.nc\.v4\.[bf]32", ptx), ptx
    assert re.search(r"st\.global\.v4\.[bf]32", ptx), ptx


def test_kernel_parameters_keep_the_original_abi():
    """Same count, sizes and alignments as the original PTX, so that a launch packs the
    arguments exactly as for it."""
    ptx = _compile(REGS + "ld.param.u8 %r1, [a];\n" + _store_r1(),
                   params=".param .u8 a, .param .align 8 .b8 s[24], .param .f64 d, "
                          ".param .u16 h, .param .f32 f, .param .u64 out, "
                          ".param .align 16 .b8 v[16]")
    start = ptx.index(".entry k(")
    signature = ptx[start:ptx.index(")", start)]
    params = re.findall(r"\.param ([^\n]*?)\s*k_param_\d+(\[\d+\])?", signature)
    assert [p[0] + p[1] for p in params] == [
        ".u8", ".align 8 .b8[24]", ".f64", ".u16", ".f32", ".u64", ".align 16 .b8[16]"]


def test_performance_directives_survive():
    ptx = compile_module(_module(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n"
        ".maxntid 256, 1, 1\n.minnctapersm 2\n{\nret;\n}\n"), "sm_80")
    assert re.search(r"\.maxntid 256, 1, 1", ptx)
    assert re.search(r"\.minnctapersm 2", ptx)


# fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2): two calls, so that it stays a function
FIB = """.func (.param .b32 r) fib(.param .b32 n)
{
.reg .b32 %a<6>; .reg .pred %q;
ld.param.b32 %a1, [n];
setp.lt.s32 %q, %a1, 2;
mov.u32 %a5, %a1;
@%q bra DONE;
add.s32 %a2, %a1, -1;
{
.param .b32 p0;
st.param.b32 [p0], %a2;
.param .b32 r0;
call.uni (r0), fib, (p0);
ld.param.b32 %a3, [r0];
}
add.s32 %a2, %a1, -2;
{
.param .b32 p0;
st.param.b32 [p0], %a2;
.param .b32 r0;
call.uni (r0), fib, (p0);
ld.param.b32 %a4, [r0];
}
add.s32 %a5, %a3, %a4;
DONE:
st.param.b32 [r], %a5;
ret;
}"""


def test_device_functions_pass_values_as_ptx_does():
    """By value, as PTX passes them: a recursion's frames are no larger than the original's
    (pointers to the caller's frame overflowed the stack of a recursive fib on the H100)."""
    ptx = _compile(REGS + "mov.u32 %r2, %tid.x;\n{\n.param .b32 p0;\nst.param.b32 [p0], %r2;\n"
                   ".param .b32 r0;\ncall.uni (r0), fib, (p0);\nld.param.b32 %r1, [r0];\n}\n"
                   + _store_r1(), extra=FIB)
    assert re.search(r"\.func\s+\(\.param \.b32 func_retval0\) fib\(\s*"
                     r"\.param \.b32 fib_param_0\s*\)", ptx), ptx


def test_printf_calls_vprintf():
    ptx = _compile(REGS + "mov.u64 %rd3, 0;\n{\n.param .b64 p0;\nst.param.b64 [p0], %rd3;\n"
                   ".param .b64 p1;\nst.param.b64 [p1], %rd3;\n.param .b32 r0;\n"
                   "call.uni (r0), vprintf, (p0, p1);\nld.param.b32 %r1, [r0];\n}\n"
                   + _store_r1(),
                   extra=".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);")
    assert re.search(r"\.extern \.func\s+\(\.param \.b32 \w+\) vprintf\s", ptx)
    assert re.search(r"call\.uni \(retval\d+\), vprintf,", ptx)


def test_output_names_the_architecture_and_a_ptx_version_the_driver_knows():
    for arch in ("sm_80", "sm_90"):
        ptx = _compile(REGS + "mov.u32 %r1, 1;\n" + _store_r1(), arch=arch)
        assert f".target {arch}" in ptx
        version = tuple(map(int, re.search(r"\.version (\d+)\.(\d+)", ptx).groups()))
        assert (7, 0) <= version <= (9, 0)


def test_unknown_architecture_is_refused():
    with pytest.raises(ValueError, match="sm_1"):
        compile_module(_module(kernel_ptx("ret;", "")), "sm_1")


def test_texture_references_are_unsupported_by_name():
    module = _module(kernel_ptx(REGS + "ret;", "", ".global .texref tex0;"))
    with pytest.raises(UnsupportedFeatureError, match="nvptx") as e:
        compile_module(module, "sm_80")
    assert e.value.location is not None and e.value.location.line == 4


def test_an_instruction_nvptx_cannot_express_names_itself_and_its_line():
    ptx = kernel_ptx(REGS + "mov.u32 %r1, 0;\ntcgen05.fence::before_thread_sync;\nret;", "",
                     target="sm_100a")
    module = _module(ptx)
    with pytest.raises(UnsupportedFeatureError) as e:
        compile_module(module, "sm_100a")
    assert e.value.feature == "tcgen05.fence::before_thread_sync"
    assert e.value.target == "nvptx"
    assert e.value.location.line == 9
    reasons = support.unsupported("nvptx", module)
    assert list(reasons.values()) == [e.value.reason]


def test_warp_barriers_and_warp_operations_without_sync():
    """bar.warp.sync is the warp barrier; shfl and vote without .sync (deprecated since
    sm_70, where ptxas refuses them) become their .sync forms over the active lanes."""
    ptx = _compile(REGS + "bar.warp.sync -1;\nmov.u32 %r2, %laneid;\n"
                   "shfl.bfly.b32 %r3, %r2, 1, 31;\nsetp.ne.s32 %p1, %r3, 0;\n"
                   "vote.ballot.b32 %r1, %p1;\n" + _store_r1(), version="6.0")
    text = "\n".join(_instructions(ptx))
    assert re.search(r"\bbar\.warp\.sync\s+-1;", text), text
    assert "activemask.b32" in text and "shfl.sync.bfly.b32" in text
    assert "vote.sync.ballot.b32" in text


def test_shared_variables_of_each_kernel_are_their_own():
    """Two kernels may each declare a .shared variable of the same name, of different sizes."""
    kernel = (".visible .entry {name}(.param .u64 out)\n{{\n.shared .align 4 .b8 buf[{size}];\n"
              ".reg .b32 %r<3>; .reg .b64 %rd<3>;\nmov.u32 %r1, buf;\n"
              "st.shared.u32 [%r1+{last}], %r1;\nld.shared.u32 %r2, [%r1+{last}];\n"
              "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n"
              "st.global.u32 [%rd2], %r2;\nret;\n}}\n")
    ptx = compile_module(_module(
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        + kernel.format(name="small", size=16, last=12)
        + kernel.format(name="large", size=4096, last=4092)), "sm_80")
    sizes = sorted(int(n) for n in re.findall(r"\.shared \.align 4 \.b8 \S+\[(\d+)\]", ptx))
    assert sizes == [16, 4096], ptx
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_80") == ""


def test_byte_registers_pass_through_byte_registers():
    """.b8 registers (e2m1x2 conversions) have no inline-asm constraint: they travel in 16-bit
    registers, converted to and from .b8 registers declared around the instruction."""
    ptx = _compile(".reg .b8 %c<2>; .reg .b32 %r<4>; .reg .f32 %f<3>; .reg .b64 %rd<3>;\n"
                   "ld.param.u64 %rd1, [out];\nld.global.v2.f32 {%f1, %f2}, [%rd1];\n"
                   "cvt.rn.satfinite.e2m1x2.f32 %c1, %f1, %f2;\n"
                   "cvt.rn.f16x2.e2m1x2 %r1, %c1;\nst.global.u32 [%rd1], %r1;\nret;",
                   arch="sm_100a", target="sm_100a", version="8.6")
    assert re.search(r"\{ \.reg \.b8 %byte<1>; cvt\.rn\.satfinite\.e2m1x2\.f32 %byte0, %r\d+, "
                     r"%r\d+; cvt\.u16\.u8 %rs\d+, %byte0; \}", ptx), ptx
    assert re.search(r"cvt\.u8\.u16 %byte0, %rs\d+; cvt\.rn\.f16x2\.e2m1x2 %r\d+, %byte0;", ptx)
