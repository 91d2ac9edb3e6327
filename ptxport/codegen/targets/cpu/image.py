"""CPU kernel images on disk: what compiling a kernel decided, found again from its input.

A process that launches a kernel compiled before (by any process) loads the kernel's image
instead of compiling: its object code and its plan (the frame layout, the sync points, the
trap lines, the access-check sites...: what the executor needs at run time), keyed by the
*input* — the PTX text, the kernel's name, the block shape (warp gangs have code per shape),
the options that change code generation (CpuOptions), ptxport's own code, the host CPU and LLVM — so
that neither the lowering (module.py, gang/) nor LLVM runs. machine.py's cache of
object code keyed by LLVM IR (`object_code`) still spares LLVM where the input differs but
the IR does not.

An image is one file, `cpu/<key>.img` under the cache root (ptxport/cache.py): MAGIC, the
length of a JSON header (4 bytes, little-endian), the header, then the object code. The
header holds the plan as tagged JSON (`encode`/`decode`): the dataclasses registered with
`stored` are written field by field (fields whose metadata says `build_only` are not), so a
field added to KernelPlan is stored with no further work when its values are numbers,
strings, lists, tuples, dicts, registered dataclasses or PTX instructions (kept as their
meaning, `spec`, and source position: what the executor reads of them). Nothing is
unpickled, and decoding builds only the registered classes: a damaged or foreign file is a
cache miss, never code run by Python.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ptxport import version
from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.errors import InternalError
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import Spec

__all__ = ["Image", "code_fingerprint", "decode", "encode", "kernel_key", "load", "store",
           "stored", "STATS"]

MAGIC = b"PTXPORT-CPU-IMAGE\0"
FORMAT = 1

# How many images this process loaded and stored (tests and benchmarks read these).
STATS = {"loaded": 0, "stored": 0}

_CLASSES: dict[str, type] = {"Spec": Spec}


def stored(cls: type) -> type:
    """Class decorator: instances of the dataclass `cls` may be part of an image's plan."""
    _CLASSES[cls.__name__] = cls
    return cls


@dataclass
class Image:
    """A compiled kernel as stored: `plan` None marks a kernel that runs as warp gangs, whose
    code is in one image per block shape (this one only says so, and holds no code)."""

    plan: object | None
    object_code: bytes
    gang_refusal: str | None


@cache
def code_fingerprint() -> str:
    """ptxport's version and the path, size and modification time of every one of its
    Python files: any edit to ptxport makes new keys (checked by stat only, once per
    process, so that a warm start does not read ptxport's sources)."""
    root = Path(__file__).resolve().parents[3]       # the ptxport package
    digest = hashlib.sha256(version.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        info = path.stat()
        digest.update(f"\0{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}"
                      .encode())
    return digest.hexdigest()


def kernel_key(module: ir.Module, kernel: str, block: tuple | None, options: dict,
               host: tuple) -> str | None:
    """The image key of `kernel` of `module` for blocks of shape `block` (None: any shape),
    under code-generation switches `options` on the host `host` (CPU, its features, LLVM's
    version); None for a module without its PTX text (built in memory), which is never
    stored."""
    if module.source is None:
        return None
    parts = (f"format {FORMAT}", module.source.name, module.source.text, kernel,
             repr(None if block is None else tuple(block)), json.dumps(options, sort_keys=True),
             code_fingerprint(), *map(str, host))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def load(key: str | None) -> Image | None:
    """The image stored under `key`, or None (none, or not readable by this ptxport)."""
    if key is None:
        return None
    data = read_entry(cache_path("cpu", key, ".img"))
    if data is None or not data.startswith(MAGIC):
        return None
    try:
        (length,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4
        header = json.loads(data[start:start + length])
        if header.get("format") != FORMAT:
            return None
        plan = None if header["plan"] is None else decode(header["plan"])
        image = Image(plan, data[start + length:], header["gang_refusal"])
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    STATS["loaded"] += 1
    return image


def store(key: str | None, image: Image) -> None:
    """Write `image` under `key` (nothing without a key; a cache that cannot be written is
    not an error)."""
    if key is None:
        return
    header = json.dumps({"format": FORMAT, "gang_refusal": image.gang_refusal,
                         "plan": None if image.plan is None else encode(image.plan)},
                        separators=(",", ":")).encode()
    write_entry(cache_path("cpu", key, ".img"),
                MAGIC + struct.pack("<I", len(header)) + header + image.object_code)
    STATS["stored"] += 1


def encode(value):
    """`value` as JSON data; every container and object is a one-key tagged dict, so that
    `decode` gives back the same types (tuples, dicts with int keys, dataclasses)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, ir.Instruction):
        return {"instruction": [encode(value.spec), value.pos]}
    name = type(value).__name__
    if dataclasses.is_dataclass(value) and _CLASSES.get(name) is type(value):
        return {"object": [name, {f.name: encode(getattr(value, f.name))
                                  for f in dataclasses.fields(value)
                                  if not f.metadata.get("build_only")}]}
    raise InternalError(f"a CPU kernel's plan holds a {name}, which kernel images cannot "
                       "store (register its class with cpu_image.stored, or mark the field "
                       "build_only); please report this to ptxport")


def decode(data):
    """The value `encode` gave `data` for; raises ValueError for data it did not write."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"not an encoded value: {data!r:.80}")
    (tag, body), = data.items()
    if tag == "tuple":
        return tuple(decode(v) for v in body)
    if tag == "dict":
        return {decode(k): decode(v) for k, v in body}
    if tag == "instruction":
        spec, pos = body
        return ir.Instruction(decode(spec), (), pos=pos)
    if tag == "object":
        name, fields = body
        cls = _CLASSES.get(name)
        if cls is None:
            raise ValueError(f"no stored class {name!r}")
        return cls(**{key: decode(value) for key, value in fields.items()})
    raise ValueError(f"unknown tag {tag!r}")
