"""CPU kernel images (codegen/targets/cpu/image.py): a later process loads a kernel's object
code and plan by the input's key without lowering it; a change of the PTX, the block shape
or ptxport's version is a miss; the plan's encoding; compiling happens in launch(), and
Events whose time includes it say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import ptxport
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu import compile as cpu_compile
from ptxport.codegen.targets.cpu import image as cpu_image
from ptxport.errors import InternalError, TimingIncludesCompileWarning
from ptxport.runtime.backends.cpu.kernels import GangKernelBinary

# Each thread stores its index in shared memory; after a barrier it reads the thread's
# mirrored in the block (ntid - 1 - tid) and adds its warp neighbour's value (shfl.bfly 1).
PTX = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<12>; .reg .b64 %rd<4>;
.shared .align 4 .b32 s[64];
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; mov.u32 %r8, %ntid.x;
mov.u32 %r3, s;
shl.b32 %r2, %r1, 2; add.u32 %r4, %r3, %r2;
st.shared.u32 [%r4], %r1;
bar.sync 0;
sub.u32 %r5, %r8, %r1; sub.u32 %r5, %r5, 1;
shl.b32 %r5, %r5, 2; add.u32 %r5, %r3, %r5;
ld.shared.u32 %r6, [%r5];
shfl.sync.bfly.b32 %r7, %r6, XOR, 31, -1;
add.u32 %r6, %r6, %r7;
mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r6;
ret;
}
"""


def _expected(n: int, xor: int = 1) -> np.ndarray:
    t = np.arange(n)
    return (n - 1 - t) + (n - 1 - (t ^ xor))


def _run(block: int = 64, xor: int = 1, native_waits: bool = True):
    """A new Program (a new module, as in a new process) launched once: (out, binary)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PTX.replace("XOR", str(xor)), code_type="ptx").compile().get_kernel("k")
    binary = kernel._binary(dev)
    binary.for_block((block, 1, 1)).native_waits = native_waits
    out = dev.allocate(4 * block, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=block), kernel, out)
    result = np.zeros(block, np.uint32)
    out.copy_to(result, stream=stream)
    stream.sync()
    return result, binary


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    cpu_image.code_fingerprint.cache_clear()
    yield tmp_path
    cpu_image.code_fingerprint.cache_clear()


@pytest.fixture
def lowerings(monkeypatch) -> list[str]:
    """The names of the lowering functions called from now on (each still runs)."""
    called: list[str] = []

    def counting(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            called.append(name)
            return original(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)

    for name in ("build_llvm", "check_gang", "build_gang", "object_code"):
        counting(cpu_compile, name)
    return called


@pytest.mark.parametrize("gang", ["1", "0"])
def test_a_second_process_loads_the_image_without_lowering(cache_dir, monkeypatch, gang,
                                                           cpu_options):
    cpu_options(gang=gang == "1")
    out, binary = _run()
    assert (out == _expected(64)).all()
    assert (binary.gang_refusal is None) == (gang == "1")
    loaded = cpu_image.STATS["loaded"]

    def refuse(*args, **kwargs):
        raise AssertionError("a cached kernel was lowered again")
    for name in ("build_llvm", "check_gang", "build_gang", "object_code"):
        monkeypatch.setattr(cpu_compile, name, refuse)
    # the general resolver too, which reads the sync points' instructions from the plan
    for native in (True, False):
        out, again = _run(native_waits=native)
        assert (out == _expected(64)).all()
        assert again.gang_refusal == binary.gang_refusal
    assert cpu_image.STATS["loaded"] > loaded


@pytest.mark.parametrize("change", ["ptx", "block", "version"])
def test_a_change_of_the_input_misses(cache_dir, monkeypatch, lowerings, change):
    _run()
    del lowerings[:]
    _run()
    assert lowerings == []
    block, xor = 64, 1
    if change == "ptx":
        xor = 2
    elif change == "block":
        block = 32
    else:
        monkeypatch.setattr(ptxport.version, "__version__", "0.0.0+other")
        cpu_image.code_fingerprint.cache_clear()
    out, _ = _run(block=block, xor=xor)
    assert (out == _expected(block, xor)).all()
    assert lowerings, f"a change of the {change} found the old image"


def test_a_first_launch_with_one_warp_wide_row_is_lowered_once(cache_dir, lowerings):
    """The shape-free check lowers a gang kernel for a 32-thread row (check_gang); a first
    launch with that row compiles that lowering instead of lowering the kernel again, and
    another shape lowers it for itself."""
    out, binary = _run(block=32)
    assert (out == _expected(32)).all() and binary.gang_refusal is None
    assert lowerings == ["check_gang", "object_code"]
    del lowerings[:]
    out, _ = _run(block=64)          # (the shape-free image is loaded: no check)
    assert (out == _expected(64)).all()
    assert lowerings == ["build_gang", "object_code"]


def test_a_plan_survives_encoding(cache_dir, monkeypatch, cpu_options):
    cpu_options(gang=False)
    _, binary = _run()
    plan = binary.plan
    assert plan.sync_points and plan.spills          # what the round trip must carry
    decoded = cpu_image.decode(cpu_image.encode(plan))
    assert decoded.spills == {}                       # build_only: ids of this process
    for name in ("name", "param_size", "static_shared", "shared_offsets", "frame_size",
                 "local_offset", "check_sites", "trap_lines", "register_offsets", "gang"):
        assert getattr(decoded, name) == getattr(plan, name), name
    for number, point in plan.sync_points.items():
        copy = decoded.sync_points[number]
        assert (copy.number, copy.line, copy.inst.pos) == (number, point.line, point.inst.pos)
        spec = copy.inst.spec
        assert (spec.opcode, spec.modifiers, spec.types, spec.groups) == (
            point.inst.spec.opcode, point.inst.spec.modifiers, point.inst.spec.types,
            point.inst.spec.groups)


def test_an_unregistered_class_is_refused_by_name():
    with pytest.raises(InternalError, match="holds a lock"):
        cpu_image.encode({"lock": threading.Lock()})


def test_a_damaged_image_is_a_miss(cache_dir, lowerings):
    _run()
    for path in (cache_dir / "cpu").glob("*.img"):
        path.write_bytes(cpu_image.MAGIC + b"\x05\x00\x00\x00{bad")
    del lowerings[:]
    out, _ = _run()
    assert (out == _expected(64)).all()
    assert lowerings


def test_code_per_block_shape_is_compiled_in_launch_not_in_the_stream(cache_dir, monkeypatch):
    threads = []
    original = GangKernelBinary._load_or_compile

    def recording(self, block):
        threads.append(threading.get_ident())
        return original(self, block)
    monkeypatch.setattr(GangKernelBinary, "_load_or_compile", recording)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PTX.replace("XOR", "1"), code_type="ptx").compile().get_kernel("k")
    out = dev.allocate(4 * 64, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=64), kernel, out)
    stream.sync()
    assert threads == [threading.get_ident()]


def test_events_say_when_their_time_includes_a_first_launch_compile(cache_dir):
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PTX.replace("XOR", "1"), code_type="ptx").compile().get_kernel("k")
    out = dev.allocate(4 * 64, stream=stream)

    def timed(block: int) -> float:
        start, end = (dev.create_event({"enable_timing": True}) for _ in range(2))
        stream.record(start)
        launch(stream, LaunchConfig(grid=1, block=block), kernel, out)
        stream.record(end)
        end.sync()
        return end - start

    with pytest.warns(TimingIncludesCompileWarning, match="includes compiling k for"):
        timed(64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timed(64)                          # compiled already: no warning
    with pytest.warns(TimingIncludesCompileWarning):
        timed(32)                          # a new block shape: new code


# printf (a call into ptxport, bound when the object code is loaded) and a module variable
# with an initializer (bound to the module's storage), in a kernel that runs thread by thread
PRINTF_PTX = """.version 7.8
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 p0, .param .b64 p1);
.global .align 1 .b8 fmt[6] = {118, 61, 37, 100, 10, 0};
.global .align 4 .u32 g = 41;
.visible .entry k()
{
.reg .b32 %r<4>; .reg .b64 %rd<6>;
.local .align 8 .b8 buf[8];
ld.global.u32 %r1, [g]; add.u32 %r1, %r1, 1;
mov.u64 %rd1, buf; cvta.local.u64 %rd2, %rd1; st.local.u32 [%rd1], %r1;
mov.u64 %rd3, fmt; cvta.global.u64 %rd4, %rd3;
{ .param .b64 param0; st.param.b64 [param0], %rd4; .param .b64 param1;
st.param.b64 [param1], %rd2; .param .b32 retval0;
call.uni (retval0), vprintf, (param0, param1); ld.param.b32 %r2, [retval0]; }
ret;
}
"""

_PROCESS = """
import json, sys
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu import image as cpu_image
dev = Device("cpu")
stream = dev.create_stream()
launch(stream, LaunchConfig(grid=1, block=1),
       Program(sys.stdin.read(), code_type="ptx").compile().get_kernel("k"))
stream.sync()
print(json.dumps(cpu_image.STATS))
"""


def test_a_new_process_runs_printf_and_module_variables_from_the_image(cache_dir):
    def process() -> tuple[str, dict]:
        env = dict(os.environ, PTXPORT_CACHE_DIR=str(cache_dir),
                   PYTHONPATH=os.pathsep.join(sys.path))
        done = subprocess.run([sys.executable, "-c", _PROCESS], input=PRINTF_PTX, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        *printed, stats = done.stdout.splitlines()
        return "\n".join(printed), json.loads(stats)

    assert process() == ("v=42", {"loaded": 0, "stored": 1})
    assert process() == ("v=42", {"loaded": 1, "stored": 0})
