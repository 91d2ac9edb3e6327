"""The warp frame's alias scope (codegen/targets/cpu/gang/frame_scopes.py): accesses through
the frame argument get `!alias.scope`, the others (loads, stores, masked accesses, the
address check) `!noalias` of it; nothing at all where a pointer into the frame goes
anywhere else than an access's address. With the scopes LLVM keeps a frame value in a
register across a store of the kernel's; and a stencil's gang code, compiled with them,
still gives numpy's result."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir as ll

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.frame_scopes import scope_frame
from ptxport.codegen.targets.cpu.machine import target_machine

I32, I64, PTR = ll.IntType(32), ll.IntType(64), ll.PointerType()


def _function(escape: str = ""):
    """f(frame, out, p): frame[4] = 7; out[0] = 1; return frame[4], the last through a
    select of two frame pointers (escape "select") or through an integer (escape "int")."""
    module = ll.Module("scopes")
    fn = ll.Function(module, ll.FunctionType(I32, [PTR, PTR, I32]), "f")
    frame, out, p = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    slot = b.gep(frame, [I64(4)], source_etype=ll.IntType(8))
    b.store(I32(7), slot)
    b.store(I32(1), out)
    if escape == "select":
        other = b.gep(frame, [I64(8)], source_etype=ll.IntType(8))
        slot = b.select(b.icmp_signed("<", p, I32(0)), slot, other)
    elif escape == "int":
        slot = b.inttoptr(b.ptrtoint(slot, I64), PTR)
    b.ret(b.load(slot, typ=I32))
    return module, fn


def test_frame_and_other_accesses_get_their_scopes():
    module, fn = _function()
    scope_frame(fn, 0)
    store_frame, store_out, load = [i for i in fn.blocks[0].instructions
                                    if isinstance(i, (ll.StoreInstr, ll.LoadInstr))]
    assert "alias.scope" in store_frame.metadata and "noalias" not in store_frame.metadata
    assert "noalias" in store_out.metadata and "alias.scope" not in store_out.metadata
    assert "alias.scope" in load.metadata
    # optimized, the load after the kernel's store is the value stored before it
    mod = llvm.parse_assembly(str(module))
    machine = target_machine()
    passes = llvm.create_pass_builder(machine, llvm.PipelineTuningOptions(speed_level=2))
    passes.getModulePassManager().run(mod, passes)
    assert "ret i32 7" in str(mod.get_function("f"))


@pytest.mark.parametrize("escape", ["select", "int"])
def test_frame_pointer_elsewhere_leaves_no_scopes(escape):
    module, fn = _function(escape)
    scope_frame(fn, 0)
    for inst in fn.blocks[0].instructions:
        assert "noalias" not in inst.metadata and "alias.scope" not in inst.metadata
    mod = llvm.parse_assembly(str(module))
    machine = target_machine()
    passes = llvm.create_pass_builder(machine, llvm.PipelineTuningOptions(speed_level=2))
    passes.getModulePassManager().run(mod, passes)
    assert "ret i32 7" not in str(mod.get_function("f"))


def test_stencil_gang_agrees_with_numpy():
    """Through the scoped gang code: interior cells, boundary copies, partial blocks."""
    with open("tests/kernels/stencil_2d.cu") as f:
        source = f.read()
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(source, code_type="c++").compile("native").get_kernel("stencil_2d_5pt")
    rng = np.random.default_rng(3)
    for width, height in ((48, 40), (37, 21)):
        a = rng.standard_normal((height, width)).astype(np.float32)
        b_in, b_out = dev.allocate(a.nbytes, stream=stream), dev.allocate(a.nbytes,
                                                                          stream=stream)
        b_in.copy_from(a, stream=stream)
        grid = ((width + 15) // 16, (height + 15) // 16)
        launch(stream, LaunchConfig(grid=grid, block=(16, 16)), kernel, b_in, b_out,
               np.int32(width), np.int32(height))
        out = np.empty_like(a)
        b_out.copy_to(out, stream=stream)
        stream.sync()
        want = a.copy()
        want[1:-1, 1:-1] = np.float32(0.25) * (((a[:-2, 1:-1] + a[2:, 1:-1]) + a[1:-1, :-2])
                                               + a[1:-1, 2:])
        np.testing.assert_array_equal(out, want)
