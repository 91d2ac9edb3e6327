"""Instruction lowerings by family; importing this package registers them all in LOWERINGS."""

from ptxport.codegen.ops import compare, control, data, floating, integer, logic, sync  # noqa: F401
from ptxport.codegen.ops import convert  # noqa: F401
from ptxport.codegen.ops import video  # noqa: F401
