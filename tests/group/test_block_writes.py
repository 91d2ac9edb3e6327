"""The write analysis (passes/block_writes.py) and the plans made from it (group_plan.py), on the
purpose-built kernels of group_kernels.py: which launches split, and how writes merge."""

from __future__ import annotations

import numpy as np
import pytest
from group_kernels import group_code

from ptxport import LaunchConfig
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.passes.block_writes import StoreForm, kernel_writes, store_offsets
from ptxport.runtime.group_plan import identity, merge_buffer, plan_launch, split_units

pytestmark = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC builds the kernels")


def _writes(name):
    kernel = group_code().get_kernel(name)
    pointers = {a.name for a in kernel.arguments_info if a.pointer}
    return kernel, kernel_writes(group_code().module, name, pointers), pointers


def _plan(name, grid, block, args, sizes):
    kernel = group_code().get_kernel(name)
    keys = {i: 100 + i for i, a in enumerate(args) if a is None}
    return plan_launch(kernel, LaunchConfig(grid=grid, block=block), list(args), keys,
                       {100 + i: s for i, s in sizes.items()}, [1.0, 1.0])


def test_affine_store_of_a_2d_grid_uses_the_scalar_argument():
    kernel, writes, pointers = _writes("rows_2d")
    names = [a.name for a in kernel.arguments_info]
    forms = store_offsets(writes, (2, 3, 1), (64, 1, 1), {names[1]: 128}, pointers)
    assert forms == [StoreForm(names[0], 0, (256, 512, 0), (4, 0, 0), 4)]
    assert forms[0].hull([(0, 1), (1, 1), (0, 0)], (64, 1, 1)) == (512, 1024)


def test_disjoint_and_strided_stores_merge_by_ranges():
    plan = _plan("disjoint", (8, 1, 1), (64, 1, 1), [None, None, np.int32(500)],
                 {0: 2000, 1: 2000})
    assert plan.split and set(plan.merges) == {100}        # the input is not written
    merge = plan.merges[100]
    assert merge.mode == "ranges" and merge.ranges == {0: [(0, 1024)], 1: [(1024, 2000)]}
    strided = _plan("strided", (4, 1, 1), (32, 1, 1), [None, np.int32(128)], {0: 4 * 384})
    assert strided.merges[100].mode == "ranges"
    assert strided.merges[100].ranges == {0: [(4, 4 * 191)], 1: [(4 * 193, 4 * 383)]}


def test_members_need_the_bytes_their_blocks_load_and_write():
    plan = _plan("blur", (8, 1, 1), (64, 1, 1), [None, None, np.int32(512)],
                 {0: 2048, 1: 2048})
    assert plan.needs[100] == {0: [(0, 1024)], 1: [(1024, 2048)]}     # what each writes
    assert plan.needs[101] == {0: [(0, 1028)], 1: [(1020, 2048)]}     # and a float of halo
    # out[index[i]] = in[i]: a store the analysis cannot place, so every buffer is merged
    # by masks, which take each member's whole copy: all are sent whole
    gather = _plan("gather_wide", (2, 1, 1), (32, 1, 1), [None, None, None],
                   {0: 256, 1: 256, 2: 512})
    assert gather.split and gather.needs == {}
    # a grid-stride loop's loads are not affine in the block index: the whole input
    grid_stride = _plan("grid_stride", (4, 1, 1), (32, 1, 1), [None, np.int32(1000)],
                        {0: 4000})
    assert 100 not in grid_stride.needs


def test_data_dependent_and_loop_stores_merge_by_masks():
    assert _plan("same_value", (4, 1, 1), (32, 1, 1), [None, None, np.int32(128)],
                 {0: 64, 1: 512}).merges[100].mode == "mask"
    assert _plan("grid_stride", (4, 1, 1), (32, 1, 1), [None, np.int32(1000)],
                 {0: 4000}).merges[100].mode == "mask"
    # every block writes out[0..31]: the ranges overlap, so masks decide
    assert _plan("conflicting", (4, 1, 1), (32, 1, 1), [None], {0: 128}).merges[100].mode \
        == "mask"


def test_associative_atomics_become_partials():
    plan = _plan("atomics", (4, 1, 1), (32, 1, 1), [None] * 7 + [np.int32(128)],
                 {0: 16, 1: 4, 2: 4, 3: 4, 4: 4, 5: 4, 6: 512})
    assert plan.split
    assert {k - 100: (m.mode, m.op, str(m.dtype)) for k, m in plan.merges.items()} == {
        0: ("atomic", "add", "uint32"), 1: ("atomic", "min", "int32"),
        2: ("atomic", "max", "int32"), 3: ("atomic", "or", "uint32"),
        4: ("atomic", "xor", "uint32"), 5: ("atomic", "add", "float32")}


@pytest.mark.parametrize(("name", "args", "why"), [
    ("slots", [None, None], "returns a value the kernel uses"),
    ("cas_max", [None, None], "depends on the order of blocks"),
    ("fenced", [None, None], "orders memory between blocks"),
    ("module_variable", [None], "module variables"),
])
def test_kernels_whose_blocks_are_tied_are_not_split(name, args, why):
    plan = _plan(name, (4, 1, 1), (32, 1, 1), args, dict.fromkeys(range(len(args)), 512))
    assert not plan.split and name in plan.reason and why in plan.reason
    assert plan.written and 100 in plan.written


def test_masks_merge_equal_writes_and_refuse_different_ones():
    from ptxport.errors import WriteConflictError
    from ptxport.runtime.group_plan import BufferMerge

    before = np.zeros(8, np.uint8)
    a, b = before.copy(), before.copy()
    a[1], b[1], b[5] = 7, 7, 9
    merged = merge_buffer(BufferMerge("mask"), before, {0: a, 1: b}, "k")
    assert merged.tolist() == [0, 7, 0, 0, 0, 9, 0, 0]
    b[1] = 8
    with pytest.raises(WriteConflictError, match=r"kernel k: .* byte 1 of argument 0"):
        merge_buffer(BufferMerge("mask"), before, {0: a, 1: b}, "k")


def test_atomic_identities_and_float_order():
    assert identity("min", np.dtype(np.int32), 8).view(np.int32).tolist() == [2**31 - 1] * 2
    assert identity("and", np.dtype(np.uint32), 4).view(np.uint32)[0] == 0xFFFFFFFF
    negative_zero = identity("add", np.dtype(np.float32), 4).view(np.float32)
    assert np.signbit(negative_zero[0])
    from ptxport.runtime.group_plan import BufferMerge

    merge = BufferMerge("atomic", op="add", dtype=np.dtype(np.float32))
    before = np.array([1.0], np.float32).view(np.uint8)
    parts = {1: np.array([1e8], np.float32).view(np.uint8),
             0: np.array([-1e8], np.float32).view(np.uint8)}
    # member 0's partial first, whatever order they arrive in: (1 - 1e8) + 1e8
    got = merge_buffer(merge, before, parts, "k").view(np.float32)[0]
    assert got == (np.float32(1.0) - np.float32(1e8)) + np.float32(1e8)


def test_split_units_follows_speeds_and_keeps_every_member():
    assert split_units(10, [1.0, 1.0]) == [(0, 5), (5, 10)]
    assert split_units(10, [3.0, 1.0]) == [(0, 8), (8, 10)] or \
        split_units(10, [3.0, 1.0]) == [(0, 7), (7, 10)]
    assert split_units(4, [100.0, 1.0]) == [(0, 3), (3, 4)]


def test_tiled_gemm_store_is_affine_though_its_registers_are_reused():
    # NVRTC reuses the register holding threadIdx.y as the tile loop's counter: the store's
    # address reads the definition before the loop, in the same block
    from corpus import KERNEL_DIR, corpus_ptx
    from ptxport import Program

    code = Program(corpus_ptx(KERNEL_DIR / "gemm_tiled.cu", "sm_80"), "ptx").compile()
    kernel = code.get_kernel("sgemm_tiled")
    names = [a.name for a in kernel.arguments_info]
    pointers = {a.name for a in kernel.arguments_info if a.pointer}
    writes = kernel_writes(code.module, "sgemm_tiled", pointers)
    forms = store_offsets(writes, (8, 8, 1), (16, 16, 1), dict.fromkeys(names[:3], 128),
                          pointers)
    assert forms == [StoreForm(names[7], 0, (64, 8192, 0), (4, 512, 0), 4)]


def test_a_buffer_updated_by_atomics_and_read_through_another_parameter_is_not_split():
    # (the same group buffer passed twice: the analysis works per buffer, not per name)
    kernel = group_code().get_kernel("atomics")
    keys = {0: 100, 1: 101, 2: 102, 3: 103, 4: 104, 5: 105, 6: 100}
    args = [None] * 7 + [np.int32(4)]
    plan = plan_launch(kernel, LaunchConfig(grid=4, block=32), args, keys,
                       {k: 64 for k in set(keys.values())}, [1.0, 1.0])
    assert not plan.split and "updated by atomics" in plan.reason


def test_addresses_from_structs_or_memory_are_refused_with_the_place():
    """A member holds its own copies of the buffers passed as pointer parameters; an address
    the kernel finds in a structure argument or in memory names none of them, so such a
    launch is refused (not split and not run whole), naming the access and its line."""
    record = np.zeros(1, dtype=[("in", "u8"), ("out", "u8"), ("n", "i4")])[0]
    for name, args, sizes, access in (
            ("via_struct", [record], {}, "ld.global.f32"),
            ("via_table", [None, np.int32(4)], {0: 64}, "st.global.f32")):
        with pytest.raises(UnsupportedFeatureError) as refused:
            _plan(name, (4, 1, 1), (32, 1, 1), args, sizes)
        message = str(refused.value)
        assert f"kernel {name}" in message and access in message, message
        assert "default_program:" in message and "pointer parameter" in message, message


def test_an_index_loaded_from_memory_is_no_address_of_its_own():
    # out[index[i]] = in[i]: the 64-bit index comes from memory, the address from `out`
    plan = _plan("gather_wide", (4, 1, 1), (32, 1, 1), [None, None, None],
                 {0: 512, 1: 512, 2: 1024})
    assert plan.split and plan.merges[100].mode == "mask"


def test_addresses_the_kernel_makes_itself_are_its_members_own():
    # a stack array of pointer parameters, and device malloc: split, not refused
    assert _plan("via_stack", (4, 1, 1), (32, 1, 1), [None, None, np.int32(1)],
                 {0: 512, 1: 512}).split
    assert _plan("via_malloc", (4, 1, 1), (32, 1, 1), [None], {0: 512}).split


def test_reads_other_than_ld_mean_whole_buffers():
    """cp.async reads global memory (its state-space modifier names the shared
    destination): the loads the analysis sees are not every read, so nothing is sent in
    part."""
    from ptxport import Program

    source = r'''
    extern "C" __global__ void staged(float *out, const float *in) {
        __shared__ float tile[128];
        int i = blockIdx.x * 128 + threadIdx.x;
        unsigned s = (unsigned)__cvta_generic_to_shared(&tile[threadIdx.x]);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(s), "l"(in + i));
        asm volatile("cp.async.wait_all;");
        __syncthreads();
        out[i] = tile[127 - threadIdx.x];
    }
    '''
    kernel = Program(source, "c++").compile().get_kernel("staged")
    plan = plan_launch(kernel, LaunchConfig(grid=4, block=128), [None, None], {0: 100, 1: 101},
                       {100: 2048, 101: 2048}, [1.0, 1.0])
    assert plan.split and plan.merges[100].mode == "ranges" and plan.needs == {}
