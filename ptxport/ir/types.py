"""IR types: PTX's fundamental types (PTX ISA 5.2.1) with their kind, width and packing.

A type is one interned `Type` object per PTX type name, so `is` compares types.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Type", "type_named", "TYPES"]


@dataclass(frozen=True, slots=True)
class Type:
    """name: the PTX spelling (`u32`); kind: 'signed', 'unsigned', 'bits', 'float', 'pred',
    or 'opaque' (texref and friends); bits: total width; lanes: elements packed in it
    (f16x2 has 2 lanes of 16 bits)."""

    name: str
    kind: str
    bits: int
    lanes: int = 1

    @property
    def size(self) -> int:
        """Size in bytes (a predicate occupies one byte where it is stored)."""
        return max(self.bits // 8, 1)

    @property
    def lane_bits(self) -> int:
        return self.bits // self.lanes

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("signed", "unsigned", "bits")

    def __str__(self) -> str:
        return self.name


def _table() -> dict[str, Type]:
    t: dict[str, Type] = {}

    def add(name: str, kind: str, bits: int, lanes: int = 1) -> None:
        t[name] = Type(name, kind, bits, lanes)

    for bits in (8, 16, 32, 64):
        add(f"s{bits}", "signed", bits)
        add(f"u{bits}", "unsigned", bits)
        add(f"b{bits}", "bits", bits)
    add("b128", "bits", 128)
    add("pred", "pred", 1)
    add("f16", "float", 16)
    add("bf16", "float", 16)
    add("f32", "float", 32)
    add("f64", "float", 64)
    add("tf32", "float", 32)
    add("f16x2", "float", 32, 2)
    add("bf16x2", "float", 32, 2)
    add("f32x2", "float", 64, 2)
    add("s16x2", "signed", 32, 2)
    add("u16x2", "unsigned", 32, 2)
    add("s8x4", "signed", 32, 4)
    add("u8x4", "unsigned", 32, 4)
    add("s32x2", "signed", 64, 2)
    add("u32x2", "unsigned", 64, 2)
    add("s4", "signed", 4)
    add("u4", "unsigned", 4)
    add("b1", "bits", 1)
    # 8-, 6- and 4-bit floats (PTX ISA 5.2.5 "Alternate floating point data formats")
    for name, bits in (("e4m3", 8), ("e5m2", 8), ("e2m3", 8), ("e3m2", 8), ("e2m1", 4)):
        add(name, "float", bits)
        add(f"{name}x2", "float", bits * 2, 2)
    add("ue8m0x2", "float", 16, 2)
    for name in ("texref", "samplerref", "surfref"):
        add(name, "opaque", 64)
    return t


TYPES: dict[str, Type] = _table()


def type_named(name: str) -> Type:
    """The Type for a PTX type name; KeyError if PTX has no such type."""
    return TYPES[name]
