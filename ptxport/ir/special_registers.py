"""PTX's special registers (PTX ISA chapter 10): read-only values the hardware provides.

Each entry: name -> (type name, components). Components are the `.x/.y/.z` (or `.w`) fields
of the v4 registers; an empty tuple means a scalar register.
"""

from __future__ import annotations

SECTION = "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#special-registers"

_XYZ = ("x", "y", "z", "w")

SPECIAL_REGISTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # Thread, block and grid coordinates (10.1-10.7)
    "%tid": ("u32", _XYZ), "%ntid": ("u32", _XYZ),
    "%laneid": ("u32", ()), "%warpid": ("u32", ()), "%nwarpid": ("u32", ()),
    "%ctaid": ("u32", _XYZ), "%nctaid": ("u32", _XYZ),
    "%smid": ("u32", ()), "%nsmid": ("u32", ()), "%gridid": ("u64", ()),
    # Clusters (10.8-10.14)
    "%is_explicit_cluster": ("pred", ()),
    "%clusterid": ("u32", _XYZ), "%nclusterid": ("u32", _XYZ),
    "%cluster_ctaid": ("u32", _XYZ), "%cluster_nctaid": ("u32", _XYZ),
    "%cluster_ctarank": ("u32", ()), "%cluster_nctarank": ("u32", ()),
    # Lane masks (10.15-10.19)
    "%lanemask_eq": ("u32", ()), "%lanemask_le": ("u32", ()), "%lanemask_lt": ("u32", ()),
    "%lanemask_ge": ("u32", ()), "%lanemask_gt": ("u32", ()),
    # Timers and counters (10.20-10.25)
    "%clock": ("u32", ()), "%clock_hi": ("u32", ()), "%clock64": ("u64", ()),
    **{f"%pm{i}": ("u32", ()) for i in range(8)},
    **{f"%pm{i}_64": ("u64", ()) for i in range(8)},
    **{f"%envreg{i}": ("b32", ()) for i in range(32)},
    "%globaltimer": ("u64", ()), "%globaltimer_lo": ("u32", ()), "%globaltimer_hi": ("u32", ()),
    # Shared memory sizes and offsets (10.26-10.30)
    "%reserved_smem_offset_begin": ("b32", ()), "%reserved_smem_offset_end": ("b32", ()),
    "%reserved_smem_offset_cap": ("b32", ()),
    **{f"%reserved_smem_offset_{i}": ("b32", ()) for i in range(2)},
    "%total_smem_size": ("u32", ()), "%aggr_smem_size": ("u32", ()),
    "%dynamic_smem_size": ("u32", ()),
    "%current_graph_exec": ("u64", ()),
}

# What a GPU whose driver sets no environment and reserves no shared memory reads. %envreg<32>
# (10.24) are initialized by the driver, read-only, zero where it sets nothing; no driver of
# ptxport's targets sets them. %reserved_smem_offset_begin/_end/_cap and %reserved_smem_offset_<2>
# (10.26-10.29) bound and index the shared memory reserved for NVIDIA's system software, which
# these targets do not reserve: an empty region at offset 0, so begin = end = cap = 0 and
# %aggr_smem_size equals %total_smem_size. NVPTX reads the driver's real values instead.
ZERO_WITHOUT_DRIVER: frozenset[str] = frozenset((
    *(f"%envreg{i}" for i in range(32)),
    "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
    *(f"%reserved_smem_offset_{i}" for i in range(2)),
))

# Predefined identifiers that are constants (PTX ISA 4.4 "Predefined identifiers"): the
# warp size is a compile-time constant, and ptxport, like every CUDA target, keeps it 32.
PREDEFINED_CONSTANTS: dict[str, int] = {"WARP_SZ": 32}
