"""`jit(link=[...])`: the files numba-cuda links into a kernel, linked at the PTX level.

numba-cuda hands `link=` files to NVIDIA's linker when it loads a kernel; its PTX declares
their functions (`cuda.declare_device`) as `.extern .func`. Here each file becomes PTX and is
linked with the kernel's by ptxport.ptx.link, as nvlink would: a `.ptx` file as it is, a
`.cu` file compiled by NVRTC as relocatable device code (-rdc, so that its `__device__`
functions stay visible) for the kernel's compute capability, with the file's directory on
the include path. Cubins, fat binaries, objects, archives and LTO-IR hold no PTX to link
(or only NVIDIA's machine code) and are refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ptxport.errors import InvalidValueError, UnsupportedFeatureError
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx
from ptxport.ptx.link import link_text

__all__ = ["linked_ptx"]


def linked_ptx(ptx: str, kernel: str, files: Sequence, cc: tuple[int, int]) -> str:
    """The kernel's PTX linked with the PTX of each file in `files`."""
    texts, names = [ptx], [f"{kernel}.ptx"]
    for file in files:
        path = Path(file)
        texts.append(_unit_ptx(path, kernel, cc))
        names.append(str(path))
    return link_text(texts, names)


def _unit_ptx(path: Path, kernel: str, cc: tuple[int, int]) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".ptx", ".cu"):
        raise UnsupportedFeatureError(
            f"linking {path} into kernel {kernel}", "ptxport", reason=(
                "ptxport links .ptx and .cu files (compiled with NVRTC); cubins, fat "
                "binaries, objects, archives and LTO-IR carry no PTX to link"))
    try:
        source = path.read_text()
    except OSError as e:
        raise InvalidValueError(f"kernel {kernel}: cannot read link file {path}: "
                                f"{e.strerror}") from None
    if suffix == ".ptx":
        return source
    options = NvrtcOptions(arch=f"sm_{cc[0]}{cc[1]}", include_paths=[str(path.parent)],
                           extra=["-rdc=true"])
    return compile_to_ptx(source, path.name, options)
