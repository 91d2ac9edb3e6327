"""Instruction lowerings by family; importing this package registers them all in LOWERINGS."""

from ptxport.codegen.ops import (  # noqa: F401
    atomic,
    compare,
    control,
    convert,
    data,
    float_format,
    float_rounding,
    float_special,
    floating,
    integer,
    logic,
    memory,
    sync,
    video,
)
