"""Device groups end to end (runtime/group.py): launches split over cpu + cpu and cpu +
opencl:0 give what one device gives; writes merge or are refused; inputs are sent once; the
split follows the members' speeds; Device("group:...") works through the public API."""

from __future__ import annotations

import time

import numpy as np
import pytest
from group_kernels import group_code

from ptxport import Device, LaunchConfig, launch
from ptxport.errors import (
    ArgumentError,
    SplitRefusedError,
    UnsupportedFeatureError,
    WriteConflictError,
)
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability
from ptxport.runtime.group import (
    DeviceGroup,
    GroupBuffer,
    GroupPointer,
    GroupStruct,
    LocalMember,
)

pytestmark = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC builds the kernels")
_OPENCL, _WHY = availability("opencl")
PAIRS = [pytest.param(("cpu", "cpu"), id="cpu+cpu"),
         pytest.param(("cpu", "opencl:0"), id="cpu+opencl", marks=pytest.mark.skipif(
             not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]


def _buffer(group, array) -> GroupBuffer:
    buffer = group.allocate(array.nbytes)
    buffer.copy_from(np.ascontiguousarray(array))
    return buffer


def _read(buffer, dtype, count):
    return buffer.copy_to(np.empty(count, dtype))


@pytest.mark.parametrize("pair", PAIRS)
def test_split_launches_equal_one_device(pair):
    group = DeviceGroup(pair)
    code = group_code()
    n = 1000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    out = group.allocate(4 * n)
    group.launch(LaunchConfig(grid=8, block=128), code.get_kernel("disjoint"), out,
                 _buffer(group, x), np.int32(n))
    assert group.last_plan.split
    np.testing.assert_array_equal(_read(out, np.float32, n), x * np.float32(2) + 1)
    rows = group.allocate(4 * 128 * 5)
    group.launch(LaunchConfig(grid=(2, 5), block=64), code.get_kernel("rows_2d"), rows,
                 np.int32(128))
    assert [box[1][1] for box in group.last_plan.boxes] == [0, 3]      # split along y
    y, xs = np.meshgrid(np.arange(5), np.arange(128), indexing="ij")
    np.testing.assert_array_equal(_read(rows, np.float32, 640).reshape(5, 128),
                                  (y * 1000 + xs).astype(np.float32))


@pytest.mark.parametrize("pair", PAIRS)
def test_block_index_and_grid_size_are_the_whole_launch(pair):
    group = DeviceGroup(pair)
    out = group.allocate(4 * 2 * 3 * 4)
    group.launch(LaunchConfig(grid=(2, 3, 4), block=32), group_code().get_kernel("grid_shape"),
                 out)
    assert group.last_plan.split and group.last_plan.boxes[1][1] == (0, 0, 2)
    assert (_read(out, np.int32, 24) == 2 * 10000 + 3 * 100 + 4).all()
    blocks = group.allocate(4 * 6 * 32)
    group.launch(LaunchConfig(grid=6, block=32), group_code().get_kernel("via_function"),
                 blocks)
    assert (_read(blocks, np.uint32, 192) == np.repeat(np.arange(6), 32)).all()


def test_strided_masked_and_same_value_writes_merge():
    group = DeviceGroup(["cpu", "cpu"])
    code = group_code()
    strided = _buffer(group, np.full(3 * 128, -1, np.int32))
    group.launch(LaunchConfig(grid=4, block=32), code.get_kernel("strided"), strided,
                 np.int32(128))
    want = np.full(3 * 128, -1, np.int32)
    want[1::3] = np.arange(128)
    np.testing.assert_array_equal(_read(strided, np.int32, 384), want)
    looped = group.allocate(4 * 1000)
    group.launch(LaunchConfig(grid=4, block=32), code.get_kernel("grid_stride"), looped,
                 np.int32(1000))
    assert group.last_plan.merges[looped.key].mode == "mask"
    np.testing.assert_array_equal(_read(looped, np.int32, 1000), np.arange(1000) * 3 + 4)
    same = _buffer(group, np.zeros(16, np.int32))
    slots = np.arange(128, dtype=np.int32) % 5          # every member writes slots 0..4
    group.launch(LaunchConfig(grid=4, block=32), code.get_kernel("same_value"), same,
                 _buffer(group, slots), np.int32(128))
    assert (_read(same, np.int32, 16) == [7] * 5 + [0] * 11).all()


def test_conflicting_writes_are_refused_and_leave_the_buffer_as_it_was():
    group = DeviceGroup(["cpu", "cpu"])
    out = _buffer(group, np.full(32, 5, np.int32))
    with pytest.raises(WriteConflictError, match=r"kernel conflicting: .*byte 0 of argument 0"):
        group.launch(LaunchConfig(grid=4, block=32), group_code().get_kernel("conflicting"),
                     out)
    assert (_read(out, np.int32, 32) == 5).all()


def test_a_kernel_reaching_memory_through_a_loaded_address_is_refused():
    group = DeviceGroup(["cpu", "cpu"])
    table = _buffer(group, np.zeros(4, np.uint64))
    with pytest.raises(UnsupportedFeatureError, match="kernel via_table reaches global memory"):
        group.launch(LaunchConfig(grid=4, block=32), group_code().get_kernel("via_table"),
                     table, np.int32(4))
    assert (_read(table, np.uint64, 4) == 0).all()


@pytest.mark.parametrize("pair", PAIRS)
def test_structure_fields_holding_group_buffers_are_translated_per_member(pair):
    group = DeviceGroup(pair)
    n = 1000
    data = np.arange(2 * n, dtype=np.float32)
    source, out = _buffer(group, data), _buffer(group, np.zeros(n, np.float32))
    record = np.zeros(1, dtype=[("in", "u8"), ("out", "u8"), ("n", "i4"), ("pad", "i4")])
    record["n"] = n
    # in = source + n floats (a pointer into the buffer), out = the whole of `out`
    argument = GroupStruct(record.tobytes(), {0: GroupPointer(source, 4 * n), 8: out})
    group.launch(LaunchConfig(grid=8, block=128), group_code().get_kernel("via_struct"),
                 argument)
    assert group.last_plan.split
    np.testing.assert_array_equal(_read(out, np.float32, n), data[n:] + 1)
    with pytest.raises(UnsupportedFeatureError, match="kernel via_struct"):
        group.launch(LaunchConfig(grid=8, block=128), group_code().get_kernel("via_struct"),
                     GroupStruct(record.tobytes(), {}))


@pytest.mark.parametrize("pair", PAIRS)
def test_atomics_combine_partials(pair):
    group = DeviceGroup(pair)
    n = 1000
    values = np.random.default_rng(3).integers(-5000, 5000, n).astype(np.int32)
    sums = _buffer(group, np.array([1, 2, 3, 4], np.uint32))
    low, high = _buffer(group, np.array([0], np.int32)), _buffer(group, np.array([0], np.int32))
    ors, xors = _buffer(group, np.array([0], np.uint32)), _buffer(group, np.array([5], np.uint32))
    fsum = _buffer(group, np.array([0.5], np.float32))
    group.launch(LaunchConfig(grid=8, block=128), group_code().get_kernel("atomics"), sums,
                 low, high, ors, xors, fsum, _buffer(group, values), np.int32(n))
    assert group.last_plan.split
    u = values.view(np.uint32)
    want_sums = [np.uint32(1 + k) + u[k::4].sum(dtype=np.uint32) for k in range(4)]
    assert _read(sums, np.uint32, 4).tolist() == want_sums
    assert _read(low, np.int32, 1)[0] == min(0, values.min())
    assert _read(high, np.int32, 1)[0] == max(0, values.max())
    assert _read(ors, np.uint32, 1)[0] == np.bitwise_or.reduce(np.uint32(1) << (u & 31))
    assert _read(xors, np.uint32, 1)[0] == np.bitwise_xor.reduce(u) ^ 5
    assert _read(fsum, np.float32, 1)[0] == 0.5 + (values & 15).sum()


def test_unsplittable_kernels_run_whole_or_are_refused_when_strict():
    group = DeviceGroup(["cpu", "cpu"])
    out, counter = group.allocate(4 * 128), _buffer(group, np.zeros(1, np.uint32))
    group.launch(LaunchConfig(grid=4, block=32), group_code().get_kernel("slots"), out, counter)
    assert not group.last_plan.split and "returns a value" in group.last_plan.reason
    assert _read(counter, np.uint32, 1)[0] == 128
    assert sorted(np.bincount(_read(out, np.int32, 128))) == [32] * 4
    strict = DeviceGroup(["cpu", "cpu"], strict=True)
    with pytest.raises(SplitRefusedError, match="kernel slots"):
        strict.launch(LaunchConfig(grid=4, block=32), group_code().get_kernel("slots"),
                      strict.allocate(512), strict.allocate(4))


def test_inputs_are_sent_once_and_outputs_only_where_stale():
    group = DeviceGroup(["cpu", "cpu"])
    n = 4096
    x = _buffer(group, np.ones(n, np.float32))
    out = group.allocate(4 * n)
    kernel = group_code().get_kernel("disjoint")
    group.launch(LaunchConfig(grid=32, block=128), kernel, out, x, np.int32(n))
    first = group.stats["bytes_sent"]
    # each member gets only the part of the input its blocks read, and of the output the
    # part they write
    assert first == 4 * n + 4 * n
    assert x.valid_on == {"host"} and out.valid_on == {"host"}
    assert group.last_plan.needs[x.key] == {0: [(0, 2 * n)], 1: [(2 * n, 4 * n)]}
    group._speeds[kernel._function] = [1.0, 1.0]        # (the same split each time)
    group.launch(LaunchConfig(grid=32, block=128), kernel, out, x, np.int32(n))
    # the input stays, and each member's part of the output is current there
    assert group.stats["bytes_sent"] == first
    out.copy_from(np.zeros(n, np.float32))
    group._speeds[kernel._function] = [1.0, 1.0]
    group.launch(LaunchConfig(grid=32, block=128), kernel, out, x, np.int32(n))
    assert group.stats["bytes_sent"] - first == 4 * n   # the new output, once in all


def test_split_follows_measured_speed():
    class Slow(LocalMember):
        def run(self, *args):
            time.sleep(0.05)
            return super().run(*args)

    group = DeviceGroup([LocalMember("cpu"), Slow("cpu")])
    out = group.allocate(4 * 64 * 128)
    kernel = group_code().get_kernel("disjoint")
    x = _buffer(group, np.zeros(64 * 128, np.float32))
    for _ in range(3):
        group.launch(LaunchConfig(grid=64, block=128), kernel, out, x, np.int32(64 * 128))
    shares = [box[2][0] for box in group.last_plan.boxes]
    assert shares[0] > 3 * shares[1], shares


def test_group_device_name_through_the_public_api():
    group = Device("group:cpu,cpu")
    assert isinstance(group, DeviceGroup) and group is Device("group:cpu,cpu")
    stream = group.create_stream()
    x = group.allocate(4 * 256, stream=stream)
    x.copy_from(np.arange(256, dtype=np.float32), stream=stream)
    out = group.allocate(4 * 256, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=64), group_code().get_kernel("disjoint"), out, x,
           np.int32(256))
    host = np.empty(256, np.float32)
    out.copy_to(host, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(host, np.arange(256, dtype=np.float32) * 2 + 1)
    with pytest.raises(ArgumentError, match="pass a GroupBuffer"):
        launch(stream, LaunchConfig(grid=4, block=64), group_code().get_kernel("disjoint"),
               Device("cpu").allocate(1024), x, np.int32(256))


def test_an_output_sent_in_parts_is_whole_where_later_read():
    """A member gets only its part of a buffer the launch only writes; when the split
    changes, or a later launch reads the buffer, it gets what its copy lacks."""
    group = DeviceGroup(["cpu", "cpu"])
    n = 64 * 128
    config = LaunchConfig(grid=64, block=128)
    strided = group_code().get_kernel("strided")       # out[3i + 1] = i: the rest stays 7
    out = _buffer(group, np.full(3 * n, 7, np.int32))
    group.launch(config, strided, out, np.int32(n))
    group._speeds[strided._function] = [3.0, 1.0]       # member 0 gets more blocks
    group.launch(config, strided, out, np.int32(n))
    assert group.last_plan.merges[out.key].mode == "ranges"
    assert group.last_plan.boxes[0][2][0] > 32
    want = np.full(3 * n, 7, np.int32)
    want[1::3] = np.arange(n)
    assert (out.copy_to(np.empty(3 * n, np.int32)) == want).all()

    disjoint = group_code().get_kernel("disjoint")
    x = _buffer(group, np.arange(n, dtype=np.float32))
    y, z = group.allocate(4 * n), group.allocate(4 * n)
    group.launch(config, disjoint, y, x, np.int32(n))
    group._speeds[disjoint._function] = [1.0, 1.0]
    sent = group.stats["bytes_sent"]
    group.launch(config, disjoint, z, y, np.int32(n))    # reads every byte of y
    # each member reads the part of y it wrote: only z's parts are sent
    assert group.stats["bytes_sent"] - sent == 4 * n
    expect = np.arange(n, dtype=np.float32) * 2 + 1
    assert (z.copy_to(np.empty(n, np.float32)) == expect * 2 + 1).all()


def test_mask_merges_compare_only_where_members_chunks_meet():
    from ptxport.errors import WriteConflictError
    from ptxport.runtime.group_plan import CHUNK, BufferMerge, changed_ranges, merge_buffer

    before = np.zeros(3 * CHUNK + 10, np.uint8)
    a, b = before.copy(), before.copy()
    a[5], a[CHUNK + 1] = 1, 2                  # member 0: chunks 0 and 1
    b[CHUNK + 2], b[-1] = 3, 4                 # member 1: chunk 1 (shared) and the tail
    parts = {}
    for member, copy in ((0, a), (1, b)):
        ranges = changed_ranges(before, copy)
        parts[member] = (ranges, [copy[lo:hi] for lo, hi in ranges])
    assert parts[0][0] == [(0, 2 * CHUNK)] and parts[1][0] == [(CHUNK, 2 * CHUNK),
                                                              (3 * CHUNK, before.size)]
    merged = merge_buffer(BufferMerge("mask"), before, parts, "k")
    assert np.flatnonzero(merged).tolist() == [5, CHUNK + 1, CHUNK + 2, before.size - 1]
    b[CHUNK + 1] = 9                           # both members wrote byte CHUNK + 1
    parts[1] = ([(CHUNK, 2 * CHUNK)], [b[CHUNK:2 * CHUNK]])
    with pytest.raises(WriteConflictError, match=f"byte {CHUNK + 1} "):
        merge_buffer(BufferMerge("mask"), before, parts, "k")


def test_stencil_sweeps_send_each_member_only_its_halo():
    group = DeviceGroup(["cpu", "cpu"])
    n = 64 * 128
    kernel = group_code().get_kernel("blur")
    config = LaunchConfig(grid=64, block=128)
    a = _buffer(group, np.random.default_rng(0).random(n, dtype=np.float32))
    b = group.allocate(4 * n)
    want = a.copy_to(np.empty(n, np.float32))
    for sweep in range(4):
        group._speeds[kernel._function] = [1.0, 1.0]
        source, target = (a, b) if sweep % 2 == 0 else (b, a)
        sent = group.stats["bytes_sent"]
        group.launch(config, kernel, target, source, np.int32(n))
        if sweep:       # each member lacks one float of the other's part of its input
            assert group.stats["bytes_sent"] - sent == 2 * 4
        padded = np.concatenate(([0], want, [0])).astype(np.float32)
        want = (padded[1:-1] + padded[:-2]) + padded[2:]
    got = a.copy_to(np.empty(n, np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-6)
