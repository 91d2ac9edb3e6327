"""Warp gangs' shared atomics through 64-bit shared addresses, as NVRTC 13.0 writes
`atomicAdd(&bins[data[i]], 1)`: the byte widened by `mul.wide.u32` and added to the
variable's 64-bit address (13.5 stays in 32 bits). gang/atomics.py checks such lanes in 64
bits unless passes/shared_bounds.py proves them inside the variable, then runs them as 32-bit
offsets (scalar_lanes.narrowed): colliding lanes all count, each lane's old value is the bin as
the lanes before it in some order left it, a partial warp's missing lanes add nothing, and a
lane past the variable faults."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir as ll

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.scalar_lanes import narrow_scaled, narrowed
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.shared_bounds import inside, shared_bounds
from ptxport.ptx.parser import parse

# Thread t counts data[t] into bins[WORDS] and writes its atom's old value to olds[t] (ATOM:
# `atom... %r9,` or `red...`, whose old value is never read: olds[t] stays -1); then bin t
# to out[t].
BINS = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 data, .param .u64 out, .param .u64 olds)
{
.reg .b16 %rs<4>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
.shared .align 4 .b32 bins[WORDS];
ld.param.u64 %rd1, [data]; ld.param.u64 %rd2, [out]; ld.param.u64 %rd12, [olds];
mov.u32 %r1, %tid.x; mov.u64 %rd7, bins;
mul.wide.u32 %rd10, %r1, 4; add.s64 %rd11, %rd7, %rd10;
mov.u32 %r5, 0;
st.shared.u32 [%rd11], %r5;
bar.sync 0;
cvt.u64.u32 %rd3, %r1; add.s64 %rd4, %rd1, %rd3;
mov.u32 %r9, -1;
BIN
ATOM [ADDRESS], 1;
add.s64 %rd13, %rd12, %rd10;
st.global.u32 [%rd13], %r9;
bar.sync 0;
ld.shared.u32 %r10, [%rd11];
add.s64 %rd14, %rd2, %rd10;
st.global.u32 [%rd14], %r10;
ret;
}
"""
ATOMS = {"used": "atom.shared.add.u32 %r9,", "unused": "red.shared.add.u32"}
# The bin's address from the byte: as NVRTC 13.0 writes it (64-bit), as 13.5 does (32-bit,
# the byte in 16 bits), and a 32-bit sum that wraps: (bins - 1024) + 4 * (byte + 256)
FORMS = {
    "13.0": ("ld.global.u8 %r6, [%rd4];\n"
             "mul.wide.u32 %rd5, %r6, 4; add.s64 %rd6, %rd7, %rd5;", "%rd6"),
    "13.5": ("ld.global.u8 %rs1, [%rd4]; mov.u32 %r11, bins;\n"
             "mul.wide.u16 %r7, %rs1, 4; add.s32 %r8, %r11, %r7;", "%r8"),
    "wraps": ("ld.global.u8 %rs1, [%rd4]; mov.u32 %r11, bins; add.u32 %r12, %r11, -1024;\n"
              "add.u16 %rs2, %rs1, 256; mul.wide.u16 %r7, %rs2, 4; add.s32 %r8, %r12, %r7;",
              "%r8"),
}


def _ptx(words: int, atom: str, form: str = "13.0") -> str:
    bin_, address = FORMS[form]
    return (BINS.replace("WORDS", str(words)).replace("ATOM", ATOMS[atom])
            .replace("BIN", bin_).replace("ADDRESS", address))


def _proven(words: int, threads: int) -> bool:
    kernel = build(parse(_ptx(words, "used"), "bins.ptx"))
    verify(kernel)
    function = kernel.functions["k"]
    atom = next(i for i in function.instructions() if i.opcode == "atom")
    return inside(shared_bounds(function, (threads, 1, 1)).get(atom), 4)


def _run(words: int, atom: str, data: np.ndarray, form: str = "13.0"
         ) -> tuple[np.ndarray, np.ndarray]:
    threads = data.size
    dev = Device("cpu")
    stream = dev.create_stream()
    ptx = _ptx(words, atom, form)
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    assert kernel._binary(dev).gang_refusal is None
    out, olds = np.zeros(threads, np.uint32), np.zeros(threads, np.int32)
    buffers = [dev.allocate(a.nbytes, stream=stream) for a in (data, out, olds)]
    buffers[0].copy_from(data, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=threads), kernel, *buffers)
    buffers[1].copy_to(out, stream=stream)
    buffers[2].copy_to(olds, stream=stream)
    stream.sync()
    return out, olds


def _data(threads: int, top: int) -> np.ndarray:
    data = np.random.default_rng(threads).integers(0, top, threads, dtype=np.uint8)
    data[3:40] = 7      # a bin that most lanes of the first warp hit
    data[64:96:2] = 9   # and half the lanes of the third
    return data


@pytest.mark.parametrize("atom", ["used", "unused"])
@pytest.mark.parametrize(("words", "threads"), [(256, 256), (256, 80), (255, 80), (255, 255)])
def test_widened_shared_atomics_count_in_some_serial_order(atom, words, threads):
    # 256 words: proven (no check); 255: checked, the bytes below 255; 80 and 255 threads:
    # a partial last warp
    assert _proven(words, threads) == (words == 256)
    data = _data(threads, 255)
    out, olds = _run(words, atom, data)
    _counted_in_some_serial_order(data, out, olds, words, atom)


def _counted_in_some_serial_order(data, out, olds, words, atom) -> None:
    counts = np.bincount(data, minlength=words)
    assert (out == counts[:data.size]).all()
    if atom == "unused":
        assert (olds == -1).all()
        return
    for value in np.unique(data):
        # the lanes of one bin saw 0, 1, 2, ... before them, each once
        assert (np.sort(olds[data == value]) == np.arange(counts[value])).all()


@pytest.mark.parametrize("atom", ["used", "unused"])
@pytest.mark.parametrize("form", ["13.5", "wraps"])
@pytest.mark.parametrize("threads", [256, 80])
def test_bytes_scaled_in_32_bits_count(atom, form, threads):
    # 13.5's form: the lanes keep their bytes (scalar_lanes.narrow_scaled) and add them in 64
    # bits; "wraps": each lane's 32-bit sum wraps past 2^32 into the array, so the lanes
    # run from their 32-bit offsets
    data = _data(threads, 256)
    out, olds = _run(256, atom, data, form)
    _counted_in_some_serial_order(data, out, olds, 256, atom)


@pytest.mark.parametrize("form", ["13.5", "wraps"])
def test_bytes_scaled_in_32_bits_past_the_array_fault(form):
    data = _data(80, 255)
    data[45] = 255
    line = next(n for n, text in enumerate(_ptx(255, "used", form).splitlines(), 1)
                if ".shared.add" in text)
    with pytest.raises(IllegalAddressError, match=rf"at line {line} in block \(0, 0, 0\), "
                       r"thread 45;"):
        _run(255, "used", data, form)


@pytest.mark.parametrize("atom", ["used", "unused"])
def test_widened_shared_atomic_past_the_variable_faults(atom):
    data = _data(80, 255)
    data[70] = 255      # bins[255], the word past a 255-word array, in the third warp
    line = next(n for n, text in enumerate(_ptx(255, atom).splitlines(), 1)
                if ".shared.add" in text)
    with pytest.raises(IllegalAddressError, match=rf"wrote 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {line} in block \(0, 0, 0\), "
                       r"thread 70;"):
        _run(255, atom, data)


def test_narrowed_computes_the_low_half_in_32_bits():
    # ((zext b) << 2) + base, truncated: the adds and shifts in i32 from the bytes; a shift
    # by 32 or more (not the same in 32 bits) is truncated after the fact
    lanes64, lanes8 = ll.VectorType(ll.IntType(64), 4), ll.VectorType(ll.IntType(8), 4)
    module = ll.Module()
    fn = ll.Function(module, ll.FunctionType(ll.VectorType(ll.IntType(32), 4),
                                             [lanes8, lanes64, lanes64]), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    data, base, _ = fn.args
    scaled = b.shl(b.zext(data, lanes64), ll.Constant(lanes64, [2] * 4))
    low = narrowed(b, b.add(base, scaled))
    assert (low.opname, [a.opname for a in low.operands]) == ("add", ["trunc", "shl"])
    assert low.operands[1].operands[0].opname == "zext"
    high = narrowed(b, b.shl(b.zext(data, lanes64), ll.Constant(lanes64, [32] * 4)))
    assert high.opname == "trunc"
    b.ret(b.add(low, high))
    llvm.parse_assembly(str(module)).verify()


def test_narrow_scaled_finds_the_bytes_under_a_splat_plus_a_shift():
    lanes32 = ll.VectorType(ll.IntType(32), 4)
    module = ll.Module()
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [ll.VectorType(ll.IntType(8), 4),
                                                             ll.IntType(32)]), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    data, u = fn.args
    splat = b.shuffle_vector(b.insert_element(ll.Constant(lanes32, None), u, ll.IntType(32)(0)),
                             ll.Constant(lanes32, None), ll.Constant(lanes32, [0] * 4))
    four = ll.Constant(lanes32, [4] * 4)
    found = narrow_scaled(b.add(splat, b.mul(b.zext(data, lanes32), four)))
    assert (found.base, found.narrow, found.shift) == (u, data, 2)
    # a sign extension, a multiplier not a power of two, no splat: not such lanes
    assert narrow_scaled(b.add(splat, b.mul(b.sext(data, lanes32), four))) is None
    assert narrow_scaled(b.add(splat, b.mul(b.zext(data, lanes32),
                                            ll.Constant(lanes32, [12] * 4)))) is None
    assert narrow_scaled(b.add(b.zext(data, lanes32), b.zext(data, lanes32))) is None
