"""The loaded native shim, seen from Python: addresses of its exported functions, and the
pool of stubs handed out for entry points ptxport does not implement."""

from __future__ import annotations

import ctypes
import sys

__all__ = ["Library", "library"]


class Library:
    """The shim library at `path` (already loaded in this process)."""

    def __init__(self, path: str):
        self.path = path
        self._lib = ctypes.CDLL(path)
        self._lib.ptxport_stub_address.restype = ctypes.c_void_p
        self._lib.ptxport_stub_address.argtypes = [ctypes.c_int]
        self._stub_count = self._lib.ptxport_stub_count()
        self._addresses: dict[str, int] = {}
        self.stub_names: list[str] = []
        self._stub_of: dict[str, int] = {}
        self._reported: set[str] = set()
        self.trace = None   # the trace file, when tracing (dispatch.py)

    def address_of(self, symbol: str) -> int | None:
        """The address of exported function `symbol`, or None if the shim has none."""
        address = self._addresses.get(symbol)
        if address is None:
            try:
                address = ctypes.cast(getattr(self._lib, symbol), ctypes.c_void_p).value
            except AttributeError:
                return None
            self._addresses[symbol] = address
        return address

    def stub_for(self, name: str) -> int:
        """A function that returns CUDA_ERROR_NOT_SUPPORTED and names `name` once: the
        shim's exported stub of that name, else one of the anonymous pool."""
        exported = self.address_of(name)
        if exported is not None:
            return exported
        k = self._stub_of.get(name)
        if k is None:
            k = len(self.stub_names)
            if k >= self._stub_count:
                k = self._stub_count - 1   # the last stub stands for all later names
            else:
                self.stub_names.append(name)
            self._stub_of[name] = k
        return self._lib.ptxport_stub_address(k)

    def stub_name(self, k: int) -> str:
        """The name stub `k` stands for: a name given out by stub_for, or one of the
        exported stubs of build.unsupported_names()."""
        if k >= self._stub_count:
            from ptxport.compat.build import unsupported_names

            return unsupported_names()[k - self._stub_count]
        name = self.stub_names[k] if k < len(self.stub_names) else "an entry point"
        if k == self._stub_count - 1:
            name = f"{name} (or one of the later unsupported names)"
        return name

    def report_unsupported(self, k: int) -> None:
        name = self.stub_name(k)
        if name not in self._reported:
            self._reported.add(name)
            print(f"ptxport: {name} is not supported yet; it returns "
                  "CUDA_ERROR_NOT_SUPPORTED", file=sys.stderr, flush=True)


library: Library | None = None
