"""The dataflow analyses the CPU target's save/restore at waits rests on: liveness after an
instruction and the registers possibly written since the previous wait."""

from __future__ import annotations

from ptxport.ir.analysis import live_after, may_write, modified_before
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse


def _kernel(body: str):
    text = (".version 8.0\n.target sm_80\n.address_size 64\n"
            f".visible .entry k(.param .u64 p)\n{{\n{body}\n}}\n")
    module = build(parse(text, "test.ptx"))
    verify(module)
    return module.functions["k"]


def _waits(kernel):
    return [i for i in kernel.instructions() if i.opcode in ("bar", "shfl", "vote")]


def _names(registers) -> set[str]:
    return {r.name for r in registers}


LOOP = """
.reg .b32 %r<8>; .reg .pred %p<3>;
mov.u32 %r1, %tid.x;
mov.u32 %r2, 0;
mov.u32 %r3, 7;
LOOP:
bar.sync 0;
add.u32 %r2, %r2, %r1;
setp.lt.u32 %p1, %r2, 100;
@%p1 bra LOOP;
bar.sync 0;
add.u32 %r4, %r2, %r3;
"""


def test_a_register_unchanged_since_the_last_wait_is_not_modified():
    kernel = _kernel(LOOP)
    first, second = _waits(kernel)
    modified = modified_before(kernel, {id(first), id(second)})
    # first wait: reached from the entry (everything written there counts) and from the
    # loop's back edge (only %r2 and %p1 written since the wait)
    assert {"%r1", "%r2", "%r3"} <= _names(modified[id(first)])
    # second wait: only from the loop, after the first wait: %r1 and %r3 were saved there
    assert _names(modified[id(second)]) & {"%r1", "%r2", "%r3"} == {"%r2"}
    live = live_after(kernel, {id(second)})
    assert _names(live[id(second)]) == {"%r2", "%r3"}


GUARDED = """
.reg .b32 %r<8>; .reg .pred %p<3>;
mov.u32 %r1, %tid.x;
setp.lt.u32 %p1, %r1, 16;
@%p1 bar.sync 0;
bar.sync 1;
add.u32 %r4, %r1, 1;
"""


def test_a_guarded_wait_may_not_have_saved_anything():
    kernel = _kernel(GUARDED)
    guarded, plain = _waits(kernel)
    modified = modified_before(kernel, {id(guarded), id(plain)})
    # threads that skipped the guarded barrier never saved %r1: the next wait must
    assert "%r1" in _names(modified[id(plain)])


RESULTS = """
.reg .b32 %r<8>; .reg .pred %p<3>;
mov.u32 %r1, %tid.x;
setp.lt.u32 %p1, %r1, 16;
bar.sync 0;
vote.sync.ballot.b32 %r2, %p1, -1;
bar.sync 0;
add.u32 %r4, %r2, %r1;
"""


def test_a_waits_results_are_written_after_it():
    kernel = _kernel(RESULTS)
    bar1, vote, bar2 = _waits(kernel)
    modified = modified_before(kernel, {id(bar1), id(vote), id(bar2)})
    assert _names(modified[id(vote)]) == set()
    # vote's destination is one of the forms the verifier does not call a destination;
    # it may be written all the same
    assert _names(may_write(vote)) >= {"%r2"}
    assert _names(modified[id(bar2)]) == {"%r2"}
