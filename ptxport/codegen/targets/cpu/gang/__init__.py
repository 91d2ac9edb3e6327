"""The CPU target's warp gangs: a warp's 32 lanes run together in vector registers
(lowering.py describes how; build.py is the entry)."""
