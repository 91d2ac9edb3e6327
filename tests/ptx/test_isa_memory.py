"""The instruction table's memory, synchronization, texture/surface and matrix chapters
(ptxport/ptx/isa/{data_movement,sync,texture_surface,matrix}.py) against hand-written PTX that
NVIDIA's ptxas accepts (tests/ptx_handwritten/{mem,sync,tex,matrix}_*.ptx).

The .ptx files hold one instruction per line, so the checks that do not need our parser find
instructions with a regular expression: ptxas accepts every file (each for the architecture
its .target names), every opcode of these chapters appears in them, and every modifier and
operand count written there fits the table. Then the parser must read every file and give
the modifiers the meaning the table promises.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from corpus import ptxas_path
from handwritten_ptx import TARGET, file_ids, instructions
from ptxport.ptx.isa import OPS, data_movement, matrix, sync, texture_surface
from ptxport.ptx.isa._base import Op

HANDWRITTEN = Path(__file__).resolve().parent.parent / "ptx_handwritten"
FILES = sorted(
    p for prefix in ("mem", "sync", "tex", "matrix") for p in HANDWRITTEN.glob(f"{prefix}_*.ptx")
)
CHAPTERS = (data_movement, sync, texture_surface, matrix)
MINE: dict[str, Op] = {op.name: op for chapter in CHAPTERS for op in chapter.OPS}

FAMILIES = {
    "data movement and conversion", "parallel synchronization and communication", "texture",
    "surface", "warp matrix", "warpgroup matrix", "tensorcore gen5",
}
# Group names of these chapters: one name per meaning, so that later stages can rely on them.
GROUP_NAMES = {
    # memory access
    "space", "sem", "scope", "mmio", "vec", "cache", "evict", "l2hint", "prefetch_size", "nc",
    "proxy", "proxy_dir", "level", "valid_addr", "tensormap", "to", "completion", "report",
    "multicast", "cta_group", "dim", "load_mode", "override", "override_attribute", "read",
    "noinc", "ignore_oob", "cp_mask", "acc", "field", "sync_restrict", "op_restrict",
    # operations and variants
    "kind", "op", "redop", "mode", "async", "red", "warp", "noftz", "noComplete", "parity",
    "phase_type", "mbar_layout", "query", "pack", "exclusive",
    # conversion
    "rnd", "ftz", "sat", "relu", "satfinite", "pzo", "scaled", "abs", "nan",
    # warp-synchronous execution
    "sync", "aligned",
    # textures and surfaces
    "geom", "mip", "comp", "addressing", "clamp",
    # matrices and sparsity
    "shape", "layout", "frag", "num", "trans", "sp", "ws", "block_scale", "scale_vec", "bitop",
    "popc", "collector", "ashift", "decompress", "fmt", "dir", "spcompress", "spfactor",
    "idxsize",
}

# --- the hand-written PTX ------------------------------------------------------------------------

def test_files_are_present() -> None:
    assert len(FILES) >= 15 and all(p.stat().st_size > 0 for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_file_is_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 600


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_ptxas_accepts(path: Path) -> None:
    ptxas = ptxas_path()
    if ptxas is None:
        pytest.skip("ptxas not installed (the nvidia-cuda-nvcc wheel, in the test extra)")
    target = TARGET.search(path.read_text())
    assert target, f"{path.name} has no .target directive"
    result = subprocess.run([str(ptxas), f"-arch={target[1]}", str(path), "-o", "/dev/null"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"ptxas rejected {path.name}:\n{result.stderr}"


def test_every_opcode_is_exercised() -> None:
    written = {w.opcode for path in FILES for w in instructions(path)}
    missing = sorted(set(MINE) - written)
    assert not missing, f"opcodes with no instruction in the hand-written PTX: {missing}"


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_written_forms_fit_the_table(path: Path) -> None:
    """Every modifier written with one of these opcodes is a type or a value of exactly one
    group, single-valued groups are given at most once, and the operand count is allowed."""
    problems = []
    for w in instructions(path):
        op = MINE.get(w.opcode)
        if op is None:
            continue
        where = f"{path.name}:{w.line}: {w.opcode}{''.join('.' + m for m in w.modifiers)}"
        seen: dict[str, str] = {}
        for word in w.modifiers:
            if word in op.types:
                continue
            groups = [name for name, group in op.groups.items() if word in group.values]
            if not groups:
                problems.append(f"{where}: '.{word}' is not in the table")
            elif not op.groups[groups[0]].multi and groups[0] in seen:
                problems.append(f"{where}: '.{seen[groups[0]]}' and '.{word}' share group "
                                f"'{groups[0]}'")
            else:
                seen[groups[0]] = word
        low, high = op.operands
        if not low <= len(w.operands) <= high:
            problems.append(f"{where}: {len(w.operands)} operands, table allows {low}..{high}")
    assert not problems, "\n".join(problems)


def _walk_instructions(node, found: list) -> None:
    from ptxport.ptx import ast

    if isinstance(node, ast.Instruction):
        found.append(node)
    elif isinstance(node, list | tuple):
        for item in node:
            _walk_instructions(item, found)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name != "source":
                _walk_instructions(getattr(node, f.name), found)


def _parsed(path: Path) -> list:
    parser = pytest.importorskip("ptxport.ptx.parser")
    found: list = []
    _walk_instructions(parser.parse(path.read_text(), str(path)), found)
    return found


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_parser_reads_every_instruction(path: Path) -> None:
    parsed, written = _parsed(path), instructions(path)
    assert [i.opcode for i in parsed] == [w.opcode for w in written]
    for instruction, w in zip(parsed, written, strict=True):
        assert len(instruction.operands) == len(w.operands), (path.name, w.line)


def _spec(path: str, text: str):
    """The parsed Spec of the first instruction in `path` written exactly as `text`."""
    for instruction in _parsed(HANDWRITTEN / path):
        if instruction.spec.text == text:
            return instruction.spec
    raise AssertionError(f"{text} not found in {path}")


@pytest.mark.parametrize("path, text, types, groups", [
    ("mem_basic.ptx", "ld.global.nc.L1::no_allocate.L2::256B.b64", ("b64",),
     {"space": "global", "nc": "nc", "evict": ("L1::no_allocate",), "prefetch_size": "L2::256B"}),
    ("mem_basic.ptx", "ld.mmio.relaxed.sys.global.u32", ("u32",),
     {"mmio": "mmio", "sem": "relaxed", "scope": "sys", "space": "global"}),
    ("mem_basic.ptx", "shfl.sync.bfly.b32", ("b32",), {"sync": "sync", "mode": "bfly"}),
    ("mem_cvt.ptx", "cvt.rzi.ftz.sat.s16.f32", ("s16", "f32"),
     {"rnd": "rzi", "ftz": "ftz", "sat": "sat"}),
    ("mem_cvt.ptx", "cvt.pack.sat.u4.s32.b32", ("u4", "s32", "b32"),
     {"pack": "pack", "sat": "sat"}),
    ("mem_async.ptx", "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes", (),
     {"kind": ("async", "bulk"), "space": ("shared::cluster", "shared::cta"),
      "completion": "mbarrier::complete_tx::bytes"}),
    ("mem_async.ptx", "cp.reduce.async.bulk.tensor.2d.global.shared::cta.and.bulk_group"
                      ".L2::cache_hint", (),
     {"kind": ("reduce", "async", "bulk", "tensor"), "dim": "2d", "op": "and",
      "space": ("global", "shared::cta"), "completion": "bulk_group",
      "l2hint": "L2::cache_hint"}),
    ("mem_async.ptx", "cp.async.mbarrier.arrive.noinc.shared::cta.b64", ("b64",),
     {"kind": ("async", "mbarrier", "arrive"), "noinc": "noinc", "space": ("shared::cta",)}),
    ("mem_sm100.ptx", "st.async.release.gpu.global.u32", ("u32",),
     {"kind": "async", "sem": "release", "scope": "gpu", "space": "global"}),
    ("sync_basic.ptx", "bar.warp.sync", (), {"warp": "warp", "op": "sync"}),
    ("sync_basic.ptx", "barrier.cluster.arrive.relaxed.aligned", (),
     {"scope": "cluster", "op": "arrive", "sem": "relaxed", "aligned": "aligned"}),
    ("sync_basic.ptx", "mbarrier.arrive.expect_tx.release.cluster.b64", ("b64",),
     {"op": ("arrive", "expect_tx"), "sem": "release", "scope": "cluster"}),
    ("sync_basic.ptx", "fence.proxy.async::generic.acquire.sync_restrict::shared::cluster"
                       ".cluster", (),
     {"kind": "proxy", "proxy_dir": "async::generic", "sem": "acquire",
      "sync_restrict": "sync_restrict::shared::cluster", "scope": "cluster"}),
    ("sync_basic.ptx", "atom.global.v8.f16.max.noftz", ("f16",),
     {"space": "global", "vec": "v8", "op": "max", "noftz": "noftz"}),
    ("tex_unified.ptx", "tex.grad.2d.v4.f32.f32", ("f32", "f32"),
     {"mip": "grad", "geom": "2d", "vec": "v4"}),
    ("tex_unified.ptx", "sured.p.max.1d.b64.clamp", ("b64",),
     {"addressing": "p", "op": "max", "geom": "1d", "clamp": "clamp"}),
    ("matrix_warp.ptx", "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col"
                        ".f16.f16.f16.f16", ("f16", "f16", "f16", "f16"),
     {"sp": "sp::ordered_metadata", "shape": "m16n8k16", "layout": ("row", "col")}),
    ("matrix_warp.ptx", "wmma.load.b.sync.aligned.col.m16n16k16.shared.f16", ("f16",),
     {"op": "load", "frag": "b", "layout": ("col",), "shape": "m16n16k16", "space": "shared"}),
    ("matrix_tcgen05.ptx", "tcgen05.wait::ld.sync.aligned", (), {"op": "wait::ld"}),
    ("matrix_tcgen05.ptx", "tcgen05.cp.cta_group::1.128x256b.b8x16.b6x16_p32", (),
     {"op": "cp", "shape": "128x256b", "fmt": ("b8x16", "b6x16_p32")}),
])
def test_parsed_modifiers_have_their_meaning(path, text, types, groups) -> None:
    spec = _spec(path, text)
    assert spec.types == types
    for name, value in groups.items():
        assert spec.get(name) == value, (name, spec.groups)


# --- the table -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", list(MINE.values()), ids=list(MINE))
def test_op_is_well_formed(op: Op) -> None:
    assert OPS[op.name] is op
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", op.section), op.section
    assert op.family in FAMILIES
    assert op.operands is not None and 0 <= op.operands[0] <= op.operands[1]
    assert (1, 0) <= op.since <= (9, 5)
    assert set(op.groups) <= GROUP_NAMES, set(op.groups) - GROUP_NAMES
    assert len(set(op.types)) == len(op.types), f"{op.name}: a type is listed twice"
    owner: dict[str, str] = {t: "types" for t in op.types}
    for name, group in op.groups.items():
        assert group.values, f"{op.name}: group '{name}' is empty"
        assert len(set(group.values)) == len(group.values), f"{op.name}.{name}: repeated value"
        for value in group.values:
            assert value not in owner, (
                f"{op.name}: '.{value}' is in both '{owner[value]}' and '{name}'")
            owner[value] = name


def test_chapters_define_each_opcode_once() -> None:
    names = [op.name for chapter in CHAPTERS for op in chapter.OPS]
    assert len(names) == len(set(names))
