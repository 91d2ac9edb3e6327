"""Every error class a ptxport user can see.

All derive from PtxportError, so `except ptxport.errors.PtxportError` catches anything ptxport
raises on purpose. Messages say what was wrong, where (file:line:column, or kernel and
argument), and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "PtxportError",
    "SourceLocation",
    "Diagnostic",
    "PtxSyntaxError",
    "PtxSemanticError",
    "IrVerificationError",
    "CompileError",
    "CooperativeLaunchTooLargeError",
    "UnsupportedFeatureError",
    "BackendUnavailableError",
    "InvalidValueError",
    "OutOfMemoryError",
    "KernelNotFoundError",
    "TimingIncludesCompileWarning",
    "LaunchError",
    "ArgumentError",
    "KernelExecutionError",
    "SplitRefusedError",
    "WriteConflictError",
    "GroupMemberError",
    "IllegalAddressError",
    "KernelTrapError",
    "KernelAssertError",
    "KernelTimeoutError",
]


class PtxportError(Exception):
    """Base class of every error ptxport raises on purpose."""


@dataclass(frozen=True)
class SourceLocation:
    """A point in a source file; lines and columns count from 1."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a source file."""

    location: SourceLocation
    message: str
    text: str = ""  # the offending source text, when there is one

    def __str__(self) -> str:
        tail = f" (at '{self.text}')" if self.text else ""
        return f"{self.location}: error: {self.message}{tail}"


class _DiagnosticsError(PtxportError):
    """An error carrying one or more diagnostics; str() lists them all, one per line."""

    def __init__(self, diagnostics: list[Diagnostic]):
        if not diagnostics:
            raise ValueError("an error needs at least one diagnostic")
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    # The first diagnostic's fields, for callers that only look at one.
    @property
    def location(self) -> SourceLocation:
        return self.diagnostics[0].location

    @property
    def file(self) -> str:
        return self.location.file

    @property
    def line(self) -> int:
        return self.location.line

    @property
    def column(self) -> int:
        return self.location.column

    @property
    def text(self) -> str:
        return self.diagnostics[0].text

    @property
    def message(self) -> str:
        return self.diagnostics[0].message


class PtxSyntaxError(_DiagnosticsError):
    """Malformed PTX: lists every error of the module, each with file:line:column."""


class PtxSemanticError(_DiagnosticsError):
    """Well-formed PTX that does not make sense: an undefined register, label, variable or
    function, an operand of the wrong kind."""


class IrVerificationError(_DiagnosticsError):
    """The IR broke one of its invariants; a bug in ptxport unless the IR was built by hand."""


class CompileError(PtxportError):
    """A compiler (NVRTC, LLVM, a linker) refused the input; `log` holds its output."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(f"{message}\n{log}" if log else message)


class UnsupportedFeatureError(PtxportError):
    """A target cannot express an instruction or feature.

    `location` is the place in the PTX; `source`, where the PTX has line information
    (`.loc`), the user's file and line, which the message names first.
    """

    def __init__(self, feature: str, target: str, location: SourceLocation | None = None,
                 reason: str = "", source: tuple[str, int] | None = None):
        self.feature, self.target, self.location, self.reason = feature, target, location, reason
        self.source = source
        where = f"{location}: " if location else ""
        if source is not None:
            ptx = f" (PTX {location})" if location else ""
            where = f"{source[0]}:{source[1]}{ptx}: "
        why = f": {reason}" if reason else ""
        super().__init__(f"{where}'{feature}' is not supported on target {target}{why}")


class InternalError(PtxportError):
    """ptxport itself failed (a bug, not a problem of the input): the message names what it
    was doing and where in the input, and the original exception is chained (`__cause__`)."""


class BackendUnavailableError(PtxportError):
    """A backend (cuda, hip, opencl) or tool it needs is not present on this machine."""


class InvalidValueError(PtxportError, ValueError):
    """A runtime call got a value it cannot take: buffers of different sizes, a closed buffer,
    an object of the wrong kind, a device that does not exist."""


class OutOfMemoryError(PtxportError, MemoryError):
    """A device could not allocate the memory asked for."""


class KernelNotFoundError(PtxportError, LookupError):
    """No kernel of that name in a compiled program; the message lists the kernels there are."""


class LaunchError(PtxportError):
    """A launch was refused before anything ran: a grid, block or shared-memory size over the
    device's limits (the ones CUDA refuses too), or arguments that do not fit the kernel."""


class ArgumentError(LaunchError):
    """A kernel argument does not fit its parameter (count, size, pointer or value); the
    message names the kernel and the parameter."""


class CooperativeLaunchTooLargeError(LaunchError):
    """A cooperative launch has more blocks than the device can run at once (CUDA's
    cudaErrorCooperativeLaunchTooLarge): its blocks may wait for each other, so all must be
    resident together."""


class KernelExecutionError(PtxportError):
    """A kernel failed while it ran; raised by the next sync of its stream."""


class SplitRefusedError(LaunchError):
    """A device group was asked to split a launch it must not split (DeviceGroup(strict=
    True)): the message names the kernel and what in it ties its blocks together."""


class WriteConflictError(KernelExecutionError):
    """Two members of a device group wrote different values to the same byte of a buffer in
    one launch: the message names the kernel, the argument and the byte."""


class GroupMemberError(KernelExecutionError):
    """A member of a device group was lost or sent corrupted data, and its share of the
    launch could not be re-run: the launch's outputs are left as they were before it."""


class IllegalAddressError(KernelExecutionError):
    """A kernel read or wrote memory it does not own (CUDA's cudaErrorIllegalAddress)."""


class KernelTrapError(KernelExecutionError):
    """A kernel executed `trap` (__trap(); a failed device-side assert raises the subclass
    KernelAssertError)."""


class KernelAssertError(KernelTrapError):
    """A device-side `assert` failed (CUDA's cudaErrorAssert); the message holds the text
    CUDA prints for it: `file:line: function: block: [x,y,z], thread: [x,y,z] Assertion
    `expression` failed.`"""


class KernelTimeoutError(KernelExecutionError, TimeoutError):
    """A kernel ran longer than it was given: a launch's watchdog (LaunchConfig(timeout=...))
    stopped it (`stopped` is True; the device is usable), or a sync(timeout=...) gave up
    waiting while it still runs (`stopped` is False). `kernels` names the kernels concerned."""

    def __init__(self, message: str, kernels: tuple[str, ...] = (), stopped: bool = False):
        self.kernels, self.stopped = tuple(kernels), stopped
        super().__init__(message)


class TimingIncludesCompileWarning(UserWarning):
    """The time between two Events includes compiling a kernel at its first launch (on the
    launching thread, while the stream had nothing else to do): launch once before timing."""
