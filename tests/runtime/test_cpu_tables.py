"""The workers' allocation tables (runtime/backends/cpu/tables.py): made for every worker at
once, they equal what each worker made alone, and on many workers an allocation made or
freed between launches is checked as it is now, whichever worker runs the access."""

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu.tables import disjoint, worker_tables

# store_at(p, i, block): block `block` stores 1.0f at p[i]; the others do nothing.
PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry store_at(.param .u64 p, .param .u32 i, .param .u32 block)
{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [i];
  ld.param.u32 %r2, [block];
  mov.u32 %r3, %ctaid.x;
  setp.ne.u32 %p1, %r3, %r2;
  @%p1 bra $L_done;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.f32 %f1, 0f3F800000;
  st.global.f32 [%rd3], %f1;
$L_done:
  ret;
}
"""


def _ranges(rng, count: int, low: int, high: int) -> list[tuple[int, int]]:
    starts = sorted(int(a) for a in rng.integers(low, high, count))
    return [(a, a + int(rng.integers(1, 1 << 16))) for a in starts]


@pytest.mark.parametrize("seed", range(6))
def test_tables_made_at_once_equal_each_workers_own(seed):
    rng = np.random.default_rng(seed)
    # (shared ranges that overlap each other: merged as each worker would merge them)
    shared = _ranges(rng, 12, 1 << 40, (1 << 40) + (1 << 18))
    own = [_ranges(rng, 2, 1 << 42, 1 << 43) for _ in range(5)]
    tables = worker_tables(shared, own)
    assert tables is not None and tables.shape[0] == 5
    for row, mine in zip(tables, own, strict=True):
        want = np.array(disjoint(shared + mine), dtype=np.uint64).reshape(-1)
        assert row.tolist() == want.tolist()


def test_own_ranges_that_overlap_leave_the_merge_to_each_worker():
    shared = [(1000, 2000), (5000, 6000)]
    assert worker_tables(shared, [[(100, 200)], [(1500, 1600)]]) is None
    assert worker_tables(shared, [[(100, 200)], [(300, 400), (350, 450)]]) is None
    assert worker_tables(shared, [[(100, 200)], [(300, 400), (500, 600)]]) is None
    assert worker_tables(shared, [[(100, 200)], [(2000, 2100)]]).tolist() == [
        [100, 200, 1000, 2000, 5000, 6000], [1000, 2000, 2000, 2100, 5000, 6000]]


@pytest.mark.parametrize("block", [0, 37, 63])
def test_allocations_changed_between_launches_are_checked_on_every_worker(block, monkeypatch):
    made = []
    monkeypatch.setattr(cpu_executor, "worker_tables",
                        lambda shared, own: made.append(len(own)) or worker_tables(shared, own))
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PTX, code_type="ptx").compile("native").get_kernel("store_at")
    config = LaunchConfig(grid=64, block=32)
    cpu_executor.set_workers(6)
    try:
        first = dev.allocate(16, stream=stream)
        launch(stream, config, kernel, first, np.uint32(1), np.uint32(block))
        stream.sync()
        second = dev.allocate(16, stream=stream)
        second.copy_from(np.zeros(4, np.float32), stream=stream)
        launch(stream, config, kernel, second, np.uint32(2), np.uint32(block))
        stream.sync()
        address = first.handle
        first.close(stream=stream)
        stream.sync()
        with pytest.raises(IllegalAddressError, match=f"address {address + 4:#x}, outside"):
            launch(stream, config, kernel, np.uint64(address), np.uint32(1), np.uint32(block))
            stream.sync()
        out = np.zeros(4, np.float32)
        second.copy_to(out, stream=stream)
        stream.sync()
    finally:
        cpu_executor.set_workers(None)
    assert out.tolist() == [0, 0, 1, 0]
    assert made and set(made) == {6}        # (every launch's tables made at once)
