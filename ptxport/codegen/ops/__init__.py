"""Instruction lowerings by family; importing this package registers them all in LOWERINGS."""

from ptxport.codegen.ops import (  # noqa: F401
    atomic,
    compare,
    control,
    convert,
    data,
    float_arith,
    float_format,
    float_rounding,
    float_special,
    integer,
    logic,
    mbarrier,
    memory,
    sync,
    video,
)
