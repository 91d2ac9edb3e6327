"""Does tests/texture_reference.py reproduce what an NVIDIA GPU's texture unit fetched?

Reads what benchmarks/texture_check.py recorded on the GPU machine and replays each fetch in
the reference (which regenerates the texels and coordinates deterministically), no GPU needed:

    python benchmarks/texture_fit.py benchmarks/results/texture_check_gpu.npz
        every fetch of every case (texture_check run --dump); prints per case kind how many
        fetches the reference reproduces, and the first that it does not
    python benchmarks/texture_fit.py texture_check.log
        the GPU fetches a texture_check log names ("... first at N: [GPU bits] vs [...]")

Exits 1 when a fetch is not reproduced. To try another formula, edit the reference and rerun.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import texture_reference as ref  # noqa: E402

FORMATS = {f[0]: f for f in ref.FORMATS}
LOG_LINE = re.compile(r"(\d)D (\S+) (\w+) (\w+) normalized=(\w+): GPU vs \w+: .*?"
                      r"first at (\d+): \[([^\]]*)\]")


def model(dims, name, mode, filt, normalized):
    fmt = FORMATS[name]
    return ref.sample(ref.texels(dims, fmt), fmt, dims, mode, filt, normalized,
                      ref.coordinates(dims, normalized))


def fit_npz(path: Path) -> int:
    """Every recorded fetch against the reference, tallied per filter/mode/format."""
    tally = collections.defaultdict(lambda: [0, 0, None])
    recorded = dict(np.load(path).items())
    ref.SEED = int(recorded.pop("seed", 0))        # texture_check run --seed
    for key, gpu in recorded.items():
        if key.startswith("cube "):         # "cube FORMAT FILTER"
            _, name, filt = key.split()
            dims, want = "cube", ref.sample_cube(ref.cube_texels(FORMATS[name]), FORMATS[name],
                                                 filt, ref.cube_directions())
            row = tally[f"{filt} cube {name}"]
        else:
            dims, name, mode, filt, normalized = key.split()
            dims, normalized = int(dims[0]), normalized == "1"
            want = model(dims, name, mode, filt, normalized)
            row = tally[f"{filt} {mode} {'norm' if normalized else 'texel'} {name}"]
        same = (want == gpu).all(axis=1)
        row[0] += len(same)
        row[1] += int(same.sum())
        if row[2] is None and not same.all():
            k = int(np.nonzero(~same)[0][0])
            where = "cube" if dims == "cube" else f"{dims}D"
            row[2] = f"{where} #{k}: GPU {gpu[k].tolist()} model {want[k].tolist()}"
    missed = 0
    for name, (fetches, same, first) in sorted(tally.items()):
        missed += fetches - same
        print(f"{name:36} {same:>5}/{fetches:<5} {first or ''}")
    print(f"{missed} fetches not reproduced")
    return int(missed > 0)


def fit_log(path: Path) -> int:
    """The GPU fetches a texture_check log names, against the reference."""
    seen, missed = set(), 0
    for m in LOG_LINE.finditer(path.read_text()):
        dims, name, mode, filt, normalized, index, bits = m.groups()
        key = (int(dims), name, mode, filt, normalized == "True", int(index))
        if key in seen:
            continue
        seen.add(key)
        got = model(*key[:5])[key[5]].tolist()
        gpu = [int(b) for b in bits.split(",")]
        if got != gpu:
            missed += 1
            print(f"not reproduced: {m.group(0)[:70]}: model {got}")
    print(f"{len(seen) - missed} of {len(seen)} logged GPU fetches reproduced")
    return int(missed > 0)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__)
        return 2
    path = Path(args[0])
    return fit_npz(path) if path.suffix == ".npz" else fit_log(path)


if __name__ == "__main__":
    sys.exit(main())
