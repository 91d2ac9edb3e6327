"""The worker pool's native entry points as Python builtin functions (CPython's METH_O
calling convention) rather than ctypes foreign functions.

A launch calls the pool's native code twice on its critical path: the opening of its job
(early.Starter, while every other worker waits for it) and the launching thread's run (its
share of the blocks, then the wait for the others, before sync() returns). Through ctypes
each call went through the foreign function's argument conversion, libffi's call frame and
the result's conversion: ~4,500 instructions, and ~200 cache lines of code and data that
the kernel's own run (its data streaming through the launching thread's caches) has
evicted by the next launch (callgrind, docs/cpu-target-measurements.md, "Session 17:
launch21"). A builtin function is called by the interpreter directly: `method(self, arg)`
here reads two addresses (`self`, bound at its making, and `arg`, Python ints) and calls
the native function. One that runs blocks lets the GIL go for the call, as ctypes'
CFUNCTYPE does (a block may call back into Python; other threads run meanwhile).

The pool's prewake (a process that launches rarely finds its threads parked) is one too.
Only CPython has the C API these use (ctypes.pythonapi): elsewhere `register` gives False
and the pool calls its functions through ctypes.
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen.lower import I64, PTR

__all__ = ["API", "bind", "build_method", "register"]

# The C API functions the methods call (the stable ABI's, in every CPython 3).
API = ("PyLong_AsVoidPtr", "PyLong_FromLongLong", "Py_IncRef", "PyErr_Occurred",
       "PyEval_SaveThread", "PyEval_RestoreThread")
_METH_O = 0x0008


class _MethodDef(ctypes.Structure):     # (PyMethodDef)
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def register() -> bool:
    """Tell LLVM where the API functions are (as `ptxport.NAME`); False where this Python
    has no C API to call (not CPython): no method is built then."""
    api = getattr(ctypes, "pythonapi", None)
    try:
        addresses = {name: ctypes.cast(getattr(api, name), ctypes.c_void_p).value
                     for name in API}
    except AttributeError:
        return False
    for name, address in addresses.items():
        llvm.add_symbol(f"ptxport.{name}", address)
    return True


def build_method(module: ll.Module, target: ll.Function, name: str,
                 lets_gil_go: bool) -> None:
    """Add `ptr NAME(ptr self, ptr arg)` to `module`: target(self, arg) of the two ints'
    values (as the target's parameters' types: pointers or i64), its i64 result as a new
    int (None for a void target); NULL, the error set, where `self` or `arg` is not an int
    (PyLong_AsVoidPtr's TypeError); with `lets_gil_go`, the GIL released around the call."""
    types = {"PyLong_AsVoidPtr": ll.FunctionType(PTR, [PTR]),
             "PyLong_FromLongLong": ll.FunctionType(PTR, [I64]),
             "Py_IncRef": ll.FunctionType(ll.VoidType(), [PTR]),
             "PyErr_Occurred": ll.FunctionType(PTR, []),
             "PyEval_SaveThread": ll.FunctionType(PTR, []),
             "PyEval_RestoreThread": ll.FunctionType(ll.VoidType(), [PTR])}
    api = {n: module.globals.get(f"ptxport.{n}") or ll.Function(module, t, f"ptxport.{n}")
           for n, t in types.items()}
    fn = ll.Function(module, ll.FunctionType(PTR, [PTR, PTR]), name)
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    values = [b.call(api["PyLong_AsVoidPtr"], [arg]) for arg in fn.args]
    check, call, failed = (fn.append_basic_block(n) for n in ("check", "call", "failed"))
    # (0 is a value too: PyLong_AsVoidPtr's failures are told by the error it set)
    zero = [b.icmp_unsigned("==", b.ptrtoint(v, I64), I64(0)) for v in values]
    b.cbranch(b.or_(*zero), check, call)
    b.position_at_end(check)
    error = b.call(api["PyErr_Occurred"], [])
    b.cbranch(b.icmp_unsigned("!=", b.ptrtoint(error, I64), I64(0)), failed, call)
    b.position_at_end(call)
    state = b.call(api["PyEval_SaveThread"], []) if lets_gil_go else None
    result = b.call(target, [v if t == PTR else b.ptrtoint(v, t)
                             for v, t in zip(values, target.function_type.args, strict=True)])
    if state is not None:
        b.call(api["PyEval_RestoreThread"], [state])
    if isinstance(target.function_type.return_type, ll.VoidType):
        none = b.inttoptr(I64(id(None)), PTR)     # (CPython: an object's id is its address)
        b.call(api["Py_IncRef"], [none])
        b.ret(none)
    else:
        b.ret(b.call(api["PyLong_FromLongLong"], [result]))
    b.position_at_end(failed)
    b.ret(ll.Constant(PTR, None))


def bind(address: int, name: str, self_address: int):
    """The builtin function of the method at `address` (build_method's, compiled) named
    `name`, with `self` the int `self_address`: called with one int, the other value."""
    definition = _MethodDef(name.encode(), address, _METH_O, None)
    _DEFS.append(definition)
    make = ctypes.pythonapi.PyCFunction_NewEx
    make.restype, make.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                     ctypes.c_void_p]
    return make(ctypes.byref(definition), self_address, None)


# The method definitions of every builtin made (CPython reads its function's definition at
# each call: they must outlive the functions; a few per pool, kept for the process).
_DEFS: list[_MethodDef] = []
