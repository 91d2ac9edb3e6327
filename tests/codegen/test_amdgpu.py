"""The AMDGPU target (ptxport.codegen.targets.amdgpu), proven without an AMD GPU.

- Every corpus kernel compiles and links for every chip of amdgpu.CHIPS, and each code object
  is checked as the loader will read it: an ELF shared object for machine AMDGPU, one
  `<kernel>.kd` kernel descriptor per kernel, and an AMDGPU metadata note (msgpack) whose
  kernel arguments have the PTX parameters' offsets and sizes and whose wave size is the
  chip's. Objects are cached on disk keyed by the LLVM IR, the chip and the linker, so an
  unchanged code generator re-compiles nothing; linking runs in a small thread pool.
- Golden LLVM IR files (golden_amdgpu/*.ll) pin the lowering of each warp-level operation and
  special register for wave32 (gfx1100) and wave64 (gfx942); a failing golden test writes the
  actual output beside the file (*.actual).
"""

from __future__ import annotations

import hashlib
import re
import struct
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import background
import llvmlite
import pytest

from corpus import corpus_ptx, corpus_sources
from cpu_harness import kernel_ptx
from ptxport.codegen.targets import amdgpu
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.ir.abi import param_layout
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

needs_lld = pytest.mark.skipif(amdgpu.linker() is None,
                               reason="no ld.lld: pip install 'ptxport[amd]' (ziglang wheel)")
needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC is needed for the corpus's PTX")

GOLDEN = Path(__file__).with_name("golden_amdgpu")
EM_AMDGPU, ET_DYN, NT_AMDGPU_METADATA = 224, 3, 32


def _module(ptx: str, name: str = "t.ptx"):
    module = build(parse(ptx, name))
    verify(module)
    return module


# --- reading code objects ----------------------------------------------------------------------

def _unpack(data: bytes, at: int = 0):
    """One msgpack value at `at` -> (value, next offset): the subset AMDGPU metadata uses."""
    tag = data[at]
    at += 1
    if tag <= 0x7F:
        return tag, at
    if tag >= 0xE0:
        return tag - 0x100, at
    if 0x80 <= tag <= 0x8F or tag in (0xDE, 0xDF):
        count, at = _length(data, at, tag, 0x80, 0xDE)
        out = {}
        for _ in range(count):
            key, at = _unpack(data, at)
            out[key], at = _unpack(data, at)
        return out, at
    if 0x90 <= tag <= 0x9F or tag in (0xDC, 0xDD):
        count, at = _length(data, at, tag, 0x90, 0xDC)
        items = []
        for _ in range(count):
            item, at = _unpack(data, at)
            items.append(item)
        return items, at
    if 0xA0 <= tag <= 0xBF or tag in (0xD9, 0xDA, 0xDB):
        size, at = ((tag - 0xA0, at) if tag <= 0xBF else
                    (int.from_bytes(data[at:at + (1, 2, 4)[tag - 0xD9]], "big"),
                     at + (1, 2, 4)[tag - 0xD9]))
        return data[at:at + size].decode(), at + size
    if tag in (0xC2, 0xC3):
        return tag == 0xC3, at
    if tag == 0xC0:
        return None, at
    formats = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h",
               0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
    fmt = formats[tag]
    return struct.unpack_from(fmt, data, at)[0], at + struct.calcsize(fmt)


def _length(data: bytes, at: int, tag: int, fix: int, wide: int) -> tuple[int, int]:
    if tag < wide:
        return tag - fix, at
    size = 2 if tag == wide else 4
    return int.from_bytes(data[at:at + size], "big"), at + size


def read_code_object(elf: bytes) -> dict:
    """The ELF type and machine, the symbol names and the AMDGPU metadata of a code object."""
    assert elf[:4] == b"\x7fELF" and elf[4] == 2, "not a 64-bit ELF file"
    e_type, e_machine = struct.unpack_from("<HH", elf, 16)
    shoff, = struct.unpack_from("<Q", elf, 40)
    shentsize, shnum = struct.unpack_from("<HH", elf, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
                for i in range(shnum)]
    symbols, metadata = set(), None
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            strings = sections[link][4]
            for at in range(offset, offset + size, entsize):
                name, = struct.unpack_from("<I", elf, at)
                end = elf.index(b"\0", strings + name)
                symbols.add(elf[strings + name:end].decode())
        elif sh_type == 7:  # SHT_NOTE
            at = offset
            while at < offset + size:
                namesz, descsz, note_type = struct.unpack_from("<III", elf, at)
                name = elf[at + 12:at + 12 + namesz].rstrip(b"\0")
                desc = at + 12 + (namesz + 3) // 4 * 4
                if name == b"AMDGPU" and note_type == NT_AMDGPU_METADATA:
                    metadata = _unpack(elf[desc:desc + descsz])[0]
                at = desc + (descsz + 3) // 4 * 4
    return {"type": e_type, "machine": e_machine, "symbols": symbols, "metadata": metadata}


# --- the corpus for every chip -------------------------------------------------------------------

def _cache_dir() -> Path:
    return nvrtc.cache_dir().parent / "amdgpu-objects"


def _code_object(module, chip: str, pool: ThreadPoolExecutor) -> Future:
    """The code object of `module` for `chip`, from the disk cache or compiled now and
    linked in `pool`."""
    text = amdgpu.compile_llvm_ir(module, chip)
    key = "\0".join([text, chip, llvmlite.__version__, " ".join(amdgpu.linker() or [])])
    cached = _cache_dir() / (hashlib.sha256(key.encode()).hexdigest() + ".hsaco")
    if cached.exists():
        done: Future = Future()
        done.set_result(cached.read_bytes())
        return done
    obj = amdgpu.compile_object(module, chip)

    def link() -> bytes:
        elf = amdgpu.link(obj)
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{id(obj)}.tmp")
        partial.write_bytes(elf)
        partial.replace(cached)
        return elf

    return pool.submit(link)


def start_early(session: pytest.Session) -> None:
    """(tests/conftest.py calls this when collection ends) Queues the corpus's compiles and
    links for every chip in the background (tests/background.py, tests/warm_corpus.py): a
    process of its own writes the code objects that the corpus test below then loads."""
    wanted = any(item.path == Path(__file__) and
                 item.originalname == "test_corpus_links_into_a_valid_code_object"
                 for item in session.items if isinstance(item, pytest.Function))
    if wanted and amdgpu.linker() is not None and nvrtc.available()[0]:
        background.submit(background.run, [sys.executable, str(
            Path(__file__).parents[1] / "warm_corpus.py"), "amdgpu"], 900)


# Corpus files AMDGPU cannot compile yet, and what the error names.
NOT_YET: dict[str, str] = {}

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ld.lld")
_CORPUS: dict[tuple[str, str], tuple[object, Future]] = {}


def _corpus_object(path: Path, chip: str) -> tuple[object, bytes]:
    """(IR module, code object) of a corpus file; the first call compiles them all, so
    that linking overlaps compiling."""
    if not _CORPUS:
        for source in corpus_sources():
            try:
                module = _module(corpus_ptx(source, "sm_80"), source.name)
            except Exception as e:  # reported by that file's own tests
                module = e
            for c in amdgpu.CHIPS:
                if isinstance(module, Exception):
                    future: Future = Future()
                    future.set_exception(module)
                else:
                    try:
                        future = _code_object(module, c, _POOL)
                    except Exception as e:
                        future = Future()
                        future.set_exception(e)
                _CORPUS[(source.name, c)] = (module, future)
    module, future = _CORPUS[(path.name, chip)]
    return module, future.result()


@needs_lld
@needs_nvrtc
@pytest.mark.parametrize("chip", list(amdgpu.CHIPS))
@pytest.mark.parametrize("path", corpus_sources(), ids=lambda p: p.name)
def test_corpus_links_into_a_valid_code_object(path, chip):
    if path.name in NOT_YET:
        with pytest.raises(UnsupportedFeatureError, match=NOT_YET[path.name]):
            _corpus_object(path, chip)
        return
    module, elf = _corpus_object(path, chip)
    info = read_code_object(elf)
    assert info["machine"] == EM_AMDGPU and info["type"] == ET_DYN
    kernels = [f for f in module.functions.values() if f.is_kernel]
    assert {f"{k.name}.kd" for k in kernels} <= info["symbols"]
    assert len([s for s in info["symbols"] if s.endswith(".kd")]) == len(kernels)
    metadata = info["metadata"]
    assert metadata["amdhsa.version"] == [1, 1]  # code object v4
    assert metadata["amdhsa.target"] == f"amdgcn-amd-amdhsa--{chip}"
    described = {k[".name"]: k for k in metadata["amdhsa.kernels"]}
    for kernel in kernels:
        entry = described[kernel.name]
        assert entry[".symbol"] == f"{kernel.name}.kd"
        assert entry[".wavefront_size"] == amdgpu.CHIPS[chip]
        slots, _ = param_layout(kernel)
        explicit = [a for a in entry.get(".args", [])
                    if not a[".value_kind"].startswith("hidden_")]
        assert [(a[".offset"], a[".size"]) for a in explicit] == \
            [(s.offset, s.size) for s in slots], kernel.name


# --- golden LLVM IR: warp operations and special registers --------------------------------------

REGS = (".reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<4>;\n")
_STORE = "ld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], %r1;\nret;"

# name -> the instructions computing %r1 (from %r2 = a value, %p1 = a predicate)
WARP_CASES = {
    "shfl_idx": "shfl.sync.idx.b32 %r1, %r2, 3, 31, -1;",
    "shfl_up": "shfl.sync.up.b32 %r1|%p2, %r2, 1, 0, -1;",
    "shfl_down": "shfl.sync.down.b32 %r1, %r2, 16, 31, -1;",
    "shfl_bfly": "shfl.sync.bfly.b32 %r1, %r2, 8, 0x1f, -1;",
    "vote_ballot": "vote.sync.ballot.b32 %r1, %p1, -1;",
    "vote_all": "vote.sync.all.pred %p2, %p1, -1;\nselp.u32 %r1, 1, 0, %p2;",
    "vote_any": "vote.sync.any.pred %p2, !%p1, -1;\nselp.u32 %r1, 1, 0, %p2;",
    "vote_uni": "vote.sync.uni.pred %p2, %p1, -1;\nselp.u32 %r1, 1, 0, %p2;",
    "activemask": "activemask.b32 %r1;",
    "match_any": "match.any.sync.b32 %r1, %r2, -1;",
    "match_all": "match.all.sync.b64 %r1|%p2, %rd2, -1;",
    "redux_add": "redux.sync.add.u32 %r1, %r2, -1;",
    "redux_min_s32": "redux.sync.min.s32 %r1, %r2, -1;",
    "elect": "elect.sync %r1|%p2, -1;",
    "bar_sync": "bar.sync 0;\nmov.u32 %r1, %r2;",
    "bar_warp_sync": "bar.warp.sync -1;\nmov.u32 %r1, %r2;",
    "laneid": "mov.u32 %r1, %laneid;",
    "warpid": "mov.u32 %r1, %warpid;",
    "lanemask_lt": "mov.u32 %r1, %lanemask_lt;",
    "tid_ntid": "mov.u32 %r3, %tid.y;\nmov.u32 %r4, %ntid.x;\nadd.u32 %r1, %r3, %r4;",
    "ctaid_nctaid": "mov.u32 %r3, %ctaid.z;\nmov.u32 %r4, %nctaid.x;\nadd.u32 %r1, %r3, %r4;",
    "dynamic_smem_size": "mov.u32 %r1, %dynamic_smem_size;",
    "clock64": "mov.u64 %rd3, %clock64;\ncvt.u32.u64 %r1, %rd3;",
}
_INPUTS = "mov.u32 %r2, %tid.x;\ncvt.u64.u32 %rd2, %r2;\nsetp.lt.u32 %p1, %r2, 5;\n"


def _function_ir(text: str) -> str:
    """The kernel's definition and the declarations it uses (not the data layout, which
    LLVM releases change)."""
    lines = [line for line in text.splitlines()
             if not line.startswith(("target datalayout", "; ModuleID", "source_filename"))]
    return "\n".join(lines).strip() + "\n"


@pytest.mark.parametrize("chip", ["gfx1100", "gfx942"], ids=["wave32", "wave64"])
@pytest.mark.parametrize("case", list(WARP_CASES))
def test_golden_lowering(case, chip):
    ptx = kernel_ptx(REGS + _INPUTS + WARP_CASES[case] + "\n" + _STORE, ".param .u64 out")
    actual = _function_ir(amdgpu.compile_llvm_ir(_module(ptx), chip))
    golden = GOLDEN / f"{case}.wave{amdgpu.CHIPS[chip]}.ll"
    if not golden.exists():
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(actual)
        pytest.skip(f"wrote the new golden file {golden.name}")
    if actual != golden.read_text():
        golden.with_suffix(".actual").write_text(actual)
        pytest.fail(f"{golden.name} differs: the actual IR is in {golden.name[:-3]}.actual")


@needs_lld
@pytest.mark.parametrize("chip", list(amdgpu.CHIPS))
def test_every_warp_operation_compiles_for_every_chip(chip):
    body = REGS + _INPUTS + "\n".join(WARP_CASES.values()) + "\n" + _STORE
    info = read_code_object(amdgpu.compile_module(_module(kernel_ptx(body, ".param .u64 out")),
                                                  chip))
    assert "k.kd" in info["symbols"]


@pytest.mark.parametrize("chip", list(amdgpu.CHIPS))
def test_warp_operations_become_the_chips_instructions(chip):
    """shfl is ds_bpermute, ballots and lanes come from the EXEC mask (mbcnt), bar.sync is
    s_barrier (gfx12: s_barrier_signal and s_barrier_wait); a wave64 chip also counts the
    upper half of the wave (v_mbcnt_hi)."""
    body = (REGS + _INPUTS + WARP_CASES["shfl_bfly"] + "\nvote.sync.ballot.b32 %r3, %p1, -1;"
            "\nadd.u32 %r1, %r1, %r3;\nbar.sync 0;\n" + _STORE)
    asm = amdgpu.compile_assembly(_module(kernel_ptx(body, ".param .u64 out")), chip)
    mnemonics = set(re.findall(r"^\s+([a-z_0-9]+)", asm, re.MULTILINE))
    assert {"ds_bpermute_b32", "v_mbcnt_lo_u32_b32"} <= mnemonics
    assert "s_barrier" in mnemonics or {"s_barrier_signal", "s_barrier_wait"} <= mnemonics
    assert ("v_mbcnt_hi_u32_b32" in mnemonics) == (amdgpu.CHIPS[chip] == 64)


# --- kernel ABI, shared memory, limits ------------------------------------------------------------

def _metadata(ptx: str, chip: str = "gfx1100") -> dict:
    info = read_code_object(amdgpu.compile_module(_module(ptx), chip))
    return info["metadata"]["amdhsa.kernels"][0]


@needs_lld
def test_kernel_arguments_keep_the_ptx_layout():
    params = (".param .u8 a, .param .u64 b, .param .align 16 .b8 s[24], .param .f32 c, "
              ".param .align 8 .b8 t[12]")
    entry = _metadata(kernel_ptx("ret;", params))
    explicit = [(a[".offset"], a[".size"]) for a in entry[".args"]
                if not a[".value_kind"].startswith("hidden_")]
    assert explicit == [(0, 1), (8, 8), (16, 24), (40, 4), (48, 12)]


@needs_lld
def test_static_and_dynamic_shared_memory_are_lds():
    body = (REGS + "mov.u32 %r1, %tid.x;\nshl.b32 %r2, %r1, 2;\nmov.u32 %r3, smem;\n"
            "add.u32 %r4, %r3, %r2;\nst.shared.u32 [%r4], %r1;\nmov.u32 %r5, dyn;\n"
            "add.u32 %r6, %r5, %r2;\nst.shared.u32 [%r6], %r1;\nret;")
    extra = ".extern .shared .align 16 .b8 dyn[];"
    ptx = kernel_ptx(".shared .align 4 .b8 smem[1024];\n" + body, ".param .u64 out", extra)
    text = amdgpu.compile_llvm_ir(_module(ptx), "gfx942")
    assert re.search(r"@\"?smem\"? = internal addrspace\(3\) global \[1024 x i8\] undef", text)
    assert re.search(r"@\"?dyn\"? = external addrspace\(3\) global \[0 x i8\]", text)
    entry = _metadata(ptx, "gfx942")
    assert entry[".group_segment_fixed_size"] == 1024


@pytest.mark.parametrize("chip", list(amdgpu.CHIPS))
def test_generic_shared_addresses_use_the_lds_aperture(chip):
    """cvta.shared adds the LDS aperture (src_shared_base), and a generic store to it is
    still an LDS store when LLVM can see where it points."""
    body = (".shared .align 4 .b8 smem[64];\n" + REGS + "mov.u64 %rd2, smem;\n"
            "cvta.shared.u64 %rd3, %rd2;\nmov.u32 %r1, 7;\nst.u32 [%rd3], %r1;\n"
            "ld.param.u64 %rd1, [out];\nst.global.u64 [%rd1], %rd3;\nret;")
    asm = amdgpu.compile_assembly(_module(kernel_ptx(body, ".param .u64 out")), chip)
    assert "src_shared_base" in asm
    assert re.search(r"^\s+ds_(write|store)_b32", asm, re.MULTILINE)


@needs_lld
@pytest.mark.parametrize("directive, expected", [(".maxntid 128, 1, 1", 128),
                                                 (".reqntid 64, 2, 1", 128), ("", 1024)])
def test_work_group_size_limits(directive, expected):
    ptx = kernel_ptx("ret;", ".param .u64 out").replace(")\n{", f")\n{directive}\n{{")
    assert _metadata(ptx)[".max_flat_workgroup_size"] == expected


def test_unsupported_instruction_names_itself_its_line_and_the_chip():
    ptx = kernel_ptx(REGS + "bar.sync 1, 64;\nret;", ".param .u64 out")
    with pytest.raises(UnsupportedFeatureError) as e:
        amdgpu.compile_llvm_ir(_module(ptx), "gfx90a")
    assert "bar.sync" in str(e.value) and "amdgpu:gfx90a" in str(e.value)
    assert str(e.value).startswith("t.ptx:8:")


def test_unknown_chip_is_refused():
    with pytest.raises(ValueError, match="gfx1100"):
        amdgpu.wave_size("gfx803")


@needs_lld
@pytest.mark.parametrize("chip", ["gfx1100", "gfx942"])
def test_recursion_links_with_llvms_stack_for_it(chip):
    """A recursive device function stays a call (LLVM cannot make fib a loop), and the code
    object asks for private (scratch) memory for its frames: the stack LLVM assumes for
    recursion (the HIP runtime allocates what the descriptor asks for)."""
    from recursive_ptx import FIB_PTX

    assert "s_swappc_b64" in amdgpu.compile_assembly(_module(FIB_PTX), chip)
    assert _metadata(FIB_PTX, chip)[".private_segment_fixed_size"] >= 16384
