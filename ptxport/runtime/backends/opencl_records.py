"""What a launch on the opencl backend reads back from its checks buffer (the SPIR-V target's
spirv_checks.py): the fault record, made into the error the launch raises, and the assert
log, printed on standard error in CUDA's words as the CUDA driver prints failed asserts.

A failed assert's text goes to stderr (CUDA's place) rather than through OpenCL's printf,
whose output goes wherever the OpenCL runtime sends it (Intel's CPU runtime: stdout). The log
has room for ASSERT_LOG_CAPACITY failed asserts per launch; more are counted and said in one
line after them.
"""

from __future__ import annotations

import sys

import numpy as np

from ptxport.codegen.targets.spirv_checks import (
    CHECKS_HEADER,
    CHECKS_LOG,
    LOG_ENTRY,
    Fault,
)
from ptxport.errors import (
    IllegalAddressError,
    KernelAssertError,
    KernelExecutionError,
    KernelTrapError,
)
from ptxport.ir.lines import where

__all__ = ["ASSERT_LOG_CAPACITY", "fault_error", "print_assert_log", "read_records",
           "with_assert_log"]

ASSERT_LOG_CAPACITY = 256


def with_assert_log(layout, words: np.ndarray) -> np.ndarray:
    """The checks buffer's words with room for the assert log after them, where the kernel
    (its module) has asserts (`layout.assertions`)."""
    if not layout.assertions:
        return words
    start = words.size
    out = np.zeros(start + 2 + ASSERT_LOG_CAPACITY * LOG_ENTRY, np.uint64)
    out[:start] = words
    out[CHECKS_LOG] = start
    out[start + 1] = ASSERT_LOG_CAPACITY
    return out


def read_records(cl, queue, checks, layout) -> tuple[np.ndarray, np.ndarray | None]:
    """(the fault record, the assert log or None) of a completed launch's checks buffer."""
    record = np.empty(CHECKS_HEADER, np.uint64)
    cl.enqueue_copy(queue, record, checks).wait()
    if not layout.assertions:
        return record, None
    start = int(record[CHECKS_LOG])
    log = np.empty((checks.size - 8 * start) // 8, np.uint64)
    cl.enqueue_copy(queue, log, checks, src_offset=8 * start).wait()
    return record, log


def print_assert_log(layout, log: np.ndarray | None) -> None:
    """Print each failed assert of the log on stderr, in CUDA's words, ordered by block and
    thread (CUDA's own order is unspecified)."""
    if log is None or not log[0]:
        return
    count = int(log[0])
    entries = log[2:2 + min(count, int(log[1])) * LOG_ENTRY].reshape(-1, LOG_ENTRY)
    lines = []
    for entry in entries:
        number, line = int(entry[0]) & 0xFFFFFFFF, int(entry[0]) >> 32
        line = line - (1 << 32) if line >> 31 else line
        group = tuple(int(v) for v in entry[1:4])
        local = tuple(int(v) for v in entry[4:7])
        lines.append(((group[::-1], local[::-1]),
                      layout.assertions[number].text(line, group, local)))
    text = "".join(f"{line}\n" for _, line in sorted(lines))
    if count > len(entries):
        text += (f"ptxport: {count - len(entries)} more failed asserts in this launch (only "
                 f"the first {len(entries)} are kept)\n")
    sys.stdout.flush()
    sys.stderr.write(text)
    sys.stderr.flush()


def fault_error(binary, fault: Fault, block: tuple[int, int, int],
                shared: int) -> KernelExecutionError:
    """The error a launch's fault record makes, in the CPU device's words: the place is
    the user's file and line, then the PTX line (`k.cu:7 (PTX line 29)`), or the PTX line
    alone without line information."""
    place = where(binary.lines.source_line(fault.line), fault.line)
    if fault.trap:
        return KernelTrapError(f"kernel '{binary.name}' executed trap at {place} in block "
                               f"{fault.group}, thread {fault.local} (CUDA's "
                               "cudaErrorLaunchFailure); the device is still usable")
    if fault.assertion is not None:
        text = binary.layout.assertions[fault.assertion].text(fault.assert_line, fault.group,
                                                              fault.local)
        return KernelAssertError(f"kernel '{binary.name}' failed a device-side assert at "
                                 f"{place}: {text}")
    x, y, z = fault.local
    thread = x + block[0] * (y + block[1] * z)
    what = (f"shared memory address {fault.address:#x}, outside the block's {shared} bytes "
            "of shared memory" if fault.shared else
            f"address {fault.address:#x}, outside every allocation")
    return IllegalAddressError(
        f"kernel '{binary.name}' {'wrote' if fault.write else 'read'} {fault.size} bytes at "
        f"{what}, at {place} in block {fault.group}, thread {thread}; nothing was "
        f"{'written' if fault.write else 'read'} there and the device is still usable")
