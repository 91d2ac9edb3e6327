"""Cases for the files about state spaces and data layout: constant_memory, device_globals,
dynamic_shared, ldg_vector, local_arrays, struct_params, grids_2d_3d and transpose.

Most results here are exact: the kernels move and index data rather than compute with it.
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar, seed_for, struct
from ._numerics import f32, fma32, poison
from .intrinsics import _int64_to_f32

__all__ = ["CASES"]


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


# constant_memory.cu -----------------------------------------------------------------------------

N_CONST = 1000
K_POLY = f32([float(s) for s in ("0.0001984127 0.0013888889 0.0083333333 0.0416666667 "
                                 "0.1666666667 0.5 1.0 1.0").split()])
K_SQUARES = np.array([k * k - 3 for k in range(16)], dtype=np.int32)


def _poly_ref(args):
    x = args[0].value
    acc = np.full_like(x, K_POLY[0])
    for c in K_POLY[1:]:
        acc = fma32(acc, x, c)
    return {1: acc}


CONSTANT_MEMORY = [
    KernelCase("constant_memory.cu", "poly_eval", grid1(N_CONST, 256), (256, 1, 1), 0,
               lambda rng: [inp(f32(rng.uniform(-2, 2, N_CONST))),
                            out(poison(N_CONST, np.float32)), scalar(np.int32(N_CONST))],
               _poly_ref, notes="exact: explicit fmaf chain"),
    KernelCase("constant_memory.cu", "lut_lookup", grid1(N_CONST, 256), (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(0, 256, N_CONST).astype(np.uint8)),
                            out(poison(N_CONST, np.int32)), scalar(np.int32(N_CONST))],
               lambda a: {1: K_SQUARES[a[0].value & 15] - 1000}, notes="exact"),
    KernelCase("constant_memory.cu", "config_scale", grid1(N_CONST, 256), (256, 1, 1), 0,
               lambda rng: [inp(rng.standard_normal(N_CONST) * 100),
                            out(poison(N_CONST, np.float64)), scalar(np.int32(N_CONST))],
               lambda a: {1: a[0].value * 0.5 + np.array([99.0, 102.0, 103.0, 0.0])[
                   np.arange(N_CONST) % 4]},
               notes="exact: x * 0.5 is exact, so contraction changes nothing"),
]

# device_globals.cu ------------------------------------------------------------------------------

N_GLOBALS = 200
G_TABLE = np.array([2, 3, 5, 7, 11, 13, 17, 19], dtype=np.int32)


def _accumulate_args(rng):
    return [inp(rng.integers(-50, 100, N_GLOBALS).astype(np.int32)),
            scalar(np.int32(N_GLOBALS))]


def _accumulated_sum() -> int:
    rng = np.random.default_rng(seed_for("device_globals.cu", "globals_accumulate"))
    return int(_accumulate_args(rng)[0].value.sum())


def _snapshot_check(args, got, expected):
    counter, through_pointer, table7 = (int(v) for v in np.asarray(got[0]).view(np.int32))
    step = _accumulated_sum()
    allowed = {(7 + k * step) & 0xFFFFFFFF for k in range(64)}
    problems = []
    if counter & 0xFFFFFFFF not in allowed:
        problems.append(f"gCounter = {counter}, expected 7 plus a whole number of "
                        f"globals_accumulate launches ({step} each)")
    if through_pointer != counter:
        problems.append(f"*gCounterPtr = {through_pointer}, but gCounter = {counter}")
    if table7 != 19:
        problems.append(f"gTable[7] = {table7}, expected 19")
    if problems:
        raise AssertionError("device_globals.cu:globals_snapshot: argument 0: "
                             + "; ".join(problems))


DEVICE_GLOBALS = [
    KernelCase("device_globals.cu", "globals_read", grid1(N_GLOBALS, 64), (64, 1, 1), 0,
               lambda rng: [out(poison(N_GLOBALS, np.int32)), scalar(np.int32(N_GLOBALS))],
               lambda a: {0: G_TABLE[np.arange(N_GLOBALS) % 8]
                          + np.array([3, 11, 100], dtype=np.int32)[np.arange(N_GLOBALS) % 3]
                          + 44},
               notes="exact; pointers in global initializers"),
    KernelCase("device_globals.cu", "globals_accumulate", grid1(N_GLOBALS, 64), (64, 1, 1), 0,
               _accumulate_args, lambda a: {},
               notes="no buffer output: it adds sum(x) to the module's gCounter, which "
                     "globals_snapshot reads"),
    KernelCase("device_globals.cu", "globals_snapshot", (1, 1, 1), (1, 1, 1), 0,
               lambda rng: [out(poison(3, np.int32))],
               lambda a: {0: np.array([7, 7, 19], dtype=np.int32)}, check=_snapshot_check,
               notes="expects 7 in a freshly loaded module; the check also accepts 7 plus any "
                     "number of globals_accumulate launches (module state persists)"),
]

# dynamic_shared.cu ------------------------------------------------------------------------------

B_DYN = 64


def _reverse_ref(args):
    return {0: args[0].value.reshape(-1, B_DYN)[:, ::-1].ravel()}


def _carve_args(rng):
    n = 8 * B_DYN
    # x with at most 40 significant bits and |y| < 2**10 make x*y exact, so fma = mul + add
    x = rng.integers(-(1 << 40), 1 << 40, n) / 1024.0
    y = rng.integers(-1000, 1000, n).astype(np.int32)
    return [inp(x), inp(y), out(poison(n, np.float64)), scalar(np.int32(n))]


def _carve_ref(args):
    x, y = args[0].value, args[1].value
    mirrored = y.reshape(-1, B_DYN)[:, ::-1].ravel()
    return {2: x * mirrored + (mirrored & 1)}


N_STATIC_DYN, B_STATIC_DYN = 1000, 128


def _static_dynamic_ref(args):
    x = args[0].value
    tiles = np.zeros(-(-N_STATIC_DYN // B_STATIC_DYN) * B_STATIC_DYN, dtype=np.float32)
    tiles[:N_STATIC_DYN] = x
    tiles = tiles.reshape(-1, B_STATIC_DYN)
    sums = tiles.copy()
    h = B_STATIC_DYN // 2
    while h:
        sums[:, :h] = sums[:, :h] + sums[:, h:2 * h]
        h //= 2
    mean = sums[:, :1] / np.float32(B_STATIC_DYN)
    return {1: (tiles - mean).ravel()[:N_STATIC_DYN]}


DYNAMIC_SHARED = [
    KernelCase("dynamic_shared.cu", "reverse_block", (10, 1, 1), (B_DYN, 1, 1), B_DYN * 4,
               lambda rng: [inout(rng.integers(-1000, 1000, 10 * B_DYN).astype(np.int32)),
                            scalar(np.int32(10 * B_DYN))], _reverse_ref, notes="exact"),
    KernelCase("dynamic_shared.cu", "carve_dynamic", (8, 1, 1), (B_DYN, 1, 1),
               B_DYN * 8 + B_DYN * 4 + B_DYN, _carve_args, _carve_ref,
               notes="exact: inputs chosen so that x*y needs no rounding"),
    KernelCase("dynamic_shared.cu", "static_and_dynamic", grid1(N_STATIC_DYN, B_STATIC_DYN),
               (B_STATIC_DYN, 1, 1), B_STATIC_DYN * 4,
               lambda rng: [inp(f32(rng.standard_normal(N_STATIC_DYN))),
                            out(poison(N_STATIC_DYN, np.float32)),
                            scalar(np.int32(N_STATIC_DYN))],
               _static_dynamic_ref, notes="exact: the kernel's fixed tree order"),
]

# ldg_vector.cu ----------------------------------------------------------------------------------

N_LDG = 1000
N4 = 700


def _gather_args(rng):
    table = f32(rng.standard_normal(500))
    return [inp(table), inp(rng.integers(0, 500, N_LDG).astype(np.int32)),
            out(poison(N_LDG, np.float32)), scalar(np.int32(N_LDG))]


def _int2_ref(args):
    x = args[0].value.reshape(-1, 2).astype(np.int64)
    y = np.stack([x[:, 1] + 1, x[:, 0] - 1], axis=1)
    return {1: y.astype(np.int32).ravel()}


def _double2_ref(args):
    x = args[0].value.reshape(-1, 2)
    return {1: np.stack([x[:, 0] + x[:, 1], x[:, 0] - x[:, 1]], axis=1).ravel()}


LDG_VECTOR = [
    KernelCase("ldg_vector.cu", "scale_float4", grid1(N4, 256), (256, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(4 * N4))),
                            out(poison(4 * N4, np.float32)), scalar(np.float32(-0.75)),
                            scalar(np.int32(N4))],
               lambda a: {1: a[0].value * a[2].value}, notes="exact; n4 float4 elements"),
    KernelCase("ldg_vector.cu", "gather_ldg", grid1(N_LDG, 256), (256, 1, 1), 0, _gather_args,
               lambda a: {2: a[0].value[a[1].value]}, notes="exact"),
    KernelCase("ldg_vector.cu", "int2_swap_add", grid1(N_LDG, 256), (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(-(2**31), 2**31, 2 * N_LDG).astype(np.int32)),
                            out(poison(2 * N_LDG, np.int32)), scalar(np.int32(N_LDG))],
               _int2_ref, notes="exact; wraps at the int limits"),
    KernelCase("ldg_vector.cu", "stream_copy_double2", grid1(N_LDG, 256), (256, 1, 1), 0,
               lambda rng: [inp(rng.standard_normal(2 * N_LDG)),
                            out(poison(2 * N_LDG, np.float64)), scalar(np.int32(N_LDG))],
               _double2_ref, notes="exact"),
]

# local_arrays.cu --------------------------------------------------------------------------------

N_LOCAL, K_MEDIAN = 1000, 7


def _median_ref(args):
    x = args[0].value
    windows = x[np.minimum(np.arange(N_LOCAL)[:, None] + np.arange(K_MEDIAN), N_LOCAL - 1)]
    return {1: np.sort(windows, axis=1)[:, K_MEDIAN // 2]}


N_BYTES, CHUNK = 5000, 37


def _local_hist_ref(args):
    data = args[0].value & 15
    owners = -(-N_BYTES // CHUNK)
    result = args[1].value.copy()
    for t in range(owners):
        counts = np.bincount(data[t * CHUNK:(t + 1) * CHUNK], minlength=16)
        result[t] = int(np.argmax(counts))  # the first maximum: the smallest value on ties
    return {1: result}


N_NODES, N_ROOTS = 300, 500


def _tree_args(rng):
    """A random binary tree of bounded depth: node k of a heap-shaped tree keeps each child
    with probability 0.8, and the node numbers are shuffled."""
    order = rng.permutation(N_NODES)
    left = np.full(N_NODES, -1, dtype=np.int32)
    right = np.full(N_NODES, -1, dtype=np.int32)
    present = np.zeros(N_NODES, dtype=bool)
    present[0] = True
    for k in range(N_NODES):
        if not present[k]:
            continue
        for child, side in ((2 * k + 1, left), (2 * k + 2, right)):
            if child < N_NODES and rng.random() < 0.8:
                present[child] = True
                side[order[k]] = order[child]
    value = rng.integers(-100, 100, N_NODES).astype(np.int32)
    roots = order[rng.choice(np.flatnonzero(present), N_ROOTS)].astype(np.int32)
    return [inp(left), inp(right), inp(value), inp(roots), out(poison(N_ROOTS, np.int32)),
            scalar(np.int32(N_ROOTS))]


def _tree_ref(args):
    left, right, value, roots = (args[k].value for k in range(4))
    sums = []
    for root in roots:
        stack, total = [int(root)], 0
        while stack:
            node = stack.pop()
            total += int(value[node])
            stack += [int(c) for c in (left[node], right[node]) if c >= 0]
        sums.append(total)
    return {4: np.array(sums, dtype=np.int32)}


LOCAL_ARRAYS = [
    KernelCase("local_arrays.cu", "local_sort_median", grid1(N_LOCAL, 128), (128, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(N_LOCAL))),
                            out(poison(N_LOCAL, np.float32)), scalar(np.int32(N_LOCAL)),
                            scalar(np.int32(K_MEDIAN))],
               _median_ref, notes="exact; windows clamped at the end"),
    KernelCase("local_arrays.cu", "local_histogram", grid1(N_BYTES // CHUNK, 64), (64, 1, 1), 0,
               lambda rng: [inp((rng.integers(0, 256, N_BYTES) % 23).astype(np.uint8)),
                            out(poison(-(-N_BYTES // CHUNK), np.int32)),
                            scalar(np.int32(N_BYTES)), scalar(np.int32(CHUNK))],
               _local_hist_ref, notes="exact; a short last chunk"),
    KernelCase("local_arrays.cu", "local_stack_sum", grid1(N_ROOTS, 64), (64, 1, 1), 0,
               _tree_args, _tree_ref, notes="exact; tree depth <= 9"),
]

# struct_params.cu -------------------------------------------------------------------------------

PARAMS = np.dtype({
    "names": ["tag", "scale", "count", "bias", "out", "rgb", "weights", "offset"],
    "formats": ["i1", "<i2", "<i4", "<f8", "<u8", ("u1", 3), ("<i2", 3), "<i8"],
    "offsets": [0, 2, 4, 8, 16, 24, 28, 40], "itemsize": 48})
VEC3_PAIR = np.dtype({"names": ["a", "b"], "formats": [("<f4", 3), ("<f4", 3)],
                      "offsets": [0, 12], "itemsize": 24})
ALIGNED16 = np.dtype({"names": ["k", "v"], "formats": ["<i4", ("<f4", 4)], "offsets": [0, 16],
                      "itemsize": 32})
N_STRUCT = 300


def _struct_value(dtype: np.dtype, **fields) -> np.void:
    holder = np.zeros(1, dtype=dtype)
    for name, value in fields.items():
        holder[0][name] = value
    return holder[0]


def _struct_apply_args(rng):
    params = _struct_value(PARAMS, tag=-5, scale=3, count=N_STRUCT, bias=0.3, out=0,
                           rgb=(10, 20, 250), weights=(-1, 2, 7), offset=123456789)
    return [struct(params, pointers={"out": 2}), inp(f32(rng.standard_normal(N_STRUCT) * 10)),
            out(poison(N_STRUCT, np.float32), passed=False)]


def _struct_apply_ref(args):
    p, x = args[0].value, args[1].value
    i = np.arange(N_STRUCT)
    v = fma32(x, np.float32(p["scale"]), np.float32(p["bias"]))
    v = v + np.float32(p["tag"])
    v = v + np.float32(int(p["rgb"].astype(np.int32).sum()))
    v = v + p["weights"].astype(np.float32)[i % 3]
    v = v + _int64_to_f32(np.int64(p["offset"]) + i)
    return {2: v}


def _struct_small_args(rng):
    def dyadic(n):  # at most 7 significant bits: products and sums below stay exact
        return f32(rng.integers(-64, 65, n) / 8.0)
    pair = _struct_value(VEC3_PAIR, a=dyadic(3), b=dyadic(3))
    aligned = _struct_value(ALIGNED16, k=-7, v=dyadic(4))
    return [struct(pair), struct(aligned), scalar(np.int8(-3)), out(poison(6, np.float64))]


def _struct_small_ref(args):
    a, b = (args[0].value[m].astype(np.float64) for m in ("a", "b"))
    k, v = int(args[1].value["k"]), args[1].value["v"].astype(np.float64)
    return {3: np.array([a @ b, *np.cross(a, b), k * v.sum(), int(args[2].value)])}


STRUCT_PARAMS = [
    KernelCase("struct_params.cu", "struct_apply", grid1(N_STRUCT, 128), (128, 1, 1), 0,
               _struct_apply_args, _struct_apply_ref, ulp=1,
               notes="Params by value (48 bytes, padding, a pointer member to an output buffer "
                     "that is not itself a parameter); exact model of the fma NVRTC emits"),
    KernelCase("struct_params.cu", "struct_small", (1, 1, 1), (1, 1, 1), 0,
               _struct_small_args, _struct_small_ref,
               notes="exact: dyadic inputs make every product and sum exact, whatever is "
                     "contracted; Aligned16 has 12 bytes of padding"),
]

# grids_2d_3d.cu ---------------------------------------------------------------------------------

W2, H2 = 50, 20
NX, NY, NZ = 20, 10, 5
SX, SY, SZ = 13, 11, 9


def _coords_2d_ref(args):
    y, x = np.mgrid[0:H2, 0:W2]
    block = x // 16 + (y // 8) * ((W2 + 15) // 16)
    thread = x % 16 + (y % 8) * 16
    return {0: np.stack([x, y, block, thread], axis=-1).astype(np.int32).ravel()}


def _coords_3d_ref(args):
    z, y, x = np.mgrid[0:NZ, 0:NY, 0:NX]
    linear = x % 8 + 8 * (y % 4 + 4 * (z % 2))
    gx, gy = (NX + 7) // 8, (NY + 3) // 4
    block = x // 8 + gx * (y // 4 + gy * (z // 2))
    cell = (z * NY + y) * NX + x
    return {0: np.stack([cell, linear, linear % 32, block], axis=-1).astype(np.int32).ravel()}


def _stride_3d_ref(args):
    z, y, x = np.mgrid[0:SZ, 0:SY, 0:SX]
    return {0: (x + 10 * y + 100 * z).astype(np.float32).ravel()}


GRIDS = [
    KernelCase("grids_2d_3d.cu", "grid_coords_2d", ((W2 + 15) // 16, (H2 + 7) // 8, 1),
               (16, 8, 1), 0,
               lambda rng: [out(poison(W2 * H2 * 4, np.int32)), scalar(np.int32(W2)),
                            scalar(np.int32(H2))], _coords_2d_ref, notes="exact"),
    KernelCase("grids_2d_3d.cu", "grid_coords_3d", ((NX + 7) // 8, (NY + 3) // 4, (NZ + 1) // 2),
               (8, 4, 2), 0,
               lambda rng: [out(poison(NX * NY * NZ * 4, np.int32)), scalar(np.int32(NX)),
                            scalar(np.int32(NY)), scalar(np.int32(NZ))],
               _coords_3d_ref, notes="exact"),
    KernelCase("grids_2d_3d.cu", "grid_stride_3d", (2, 2, 2), (4, 4, 4), 0,
               lambda rng: [out(poison(SX * SY * SZ, np.float32)), scalar(np.int32(SX)),
                            scalar(np.int32(SY)), scalar(np.int32(SZ))],
               _stride_3d_ref, notes="exact; each axis's grid-stride loop runs twice"),
]

# transpose.cu -----------------------------------------------------------------------------------

ROWS_T, COLS_T = 45, 70


def _transpose_args(rng):
    return [inp(f32(rng.standard_normal(ROWS_T * COLS_T))),
            out(poison(ROWS_T * COLS_T, np.float32)), scalar(np.int32(ROWS_T)),
            scalar(np.int32(COLS_T))]


def _transpose_ref(args):
    return {1: args[0].value.reshape(ROWS_T, COLS_T).T.ravel()}


TRANSPOSE = [
    KernelCase("transpose.cu", "transpose_naive", ((COLS_T + 15) // 16, (ROWS_T + 15) // 16, 1),
               (16, 16, 1), 0, _transpose_args, _transpose_ref, notes="exact"),
    KernelCase("transpose.cu", "transpose_shared_padded",
               ((COLS_T + 31) // 32, (ROWS_T + 31) // 32, 1), (32, 8, 1), 0, _transpose_args,
               _transpose_ref, notes="exact; partial tiles on both axes"),
]

CASES = (CONSTANT_MEMORY + DEVICE_GLOBALS + DYNAMIC_SHARED + LDG_VECTOR + LOCAL_ARRAYS
         + STRUCT_PARAMS + GRIDS + TRANSPOSE)
