#!/bin/bash
# Issue 17: are ptxport's cuBLAS answers NVIDIA's? The two cuBLAS corpus programs
# (tests/programs/cublas_routines.cu, cublaslt_epilogues.cu) and a probe of illegal arguments
# (benchmarks/compat/cublas_probe.cu) run natively with NVIDIA's libcublas(Lt).so.13 (the oracle) and
# under `ptxport run --device cuda:0`; each program's stdout is diffed against its expected
# file, and the probe's native stdout against ptxport's.
#
#   here (needs the nvcc wheels):   benchmarks/cublas_native.sh build   -> build/cublas_native/
#   on the GPU machine:             benchmarks/cublas_native.sh
#     (device run: carry build/cublas_native and .whl as for the other device
#      scripts; $OUT gets cublas_native.tar.gz with every stdout, stderr and diff;
#      DEVICE=cpu and NVLIB=DIR override the ptxport device and where NVIDIA's
#      libcublas.so.13 is found)
cd "$(dirname "$0")/.."
DIR=build/cublas_native
PROGRAMS="cublas_routines cublaslt_epilogues"

if [ "${1:-run}" = build ]; then
  PY=${PYTHON:-python3}
  export PYTHONPATH=$PWD
  $PY tests/programs_harness.py --out $DIR $PROGRAMS || exit 1
  $PY - <<'PYEOF' || exit 1
import subprocess, sys
sys.path.insert(0, "tests")
import programs_harness as h
from ptxport.compat.build import shim_directory
root = h.toolkit_root()
command = [str(root / "bin" / "nvcc"), *h.ARCH_FLAGS, f"-I{h.CUBLAS_INCLUDE}",
           f"-L{shim_directory()}", "-lcublas", "-o", "build/cublas_native/cublas_probe",
           "benchmarks/compat/cublas_probe.cu"]
subprocess.run(command, env=h.build_env(root), check=True)
PYEOF
  ls -la $DIR
  exit 0
fi

RESULTS=${OUT:-/tmp}
OUT=$(mktemp -d /tmp/cublas_native.XXXX)   # every stdout, stderr and diff; one archive at the end
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
DEVICE=${DEVICE:-cuda:0}
# NVIDIA's own cuBLAS: the nvidia-cublas wheel next to the machine's PyTorch
NVLIB=${NVLIB:-}
[ -n "$NVLIB" ] || NVLIB=$(python3 -c "import nvidia, glob; print(':'.join(sorted({p.rsplit('/', 1)[0] for r in nvidia.__path__ for p in glob.glob(r + '/*/lib/libcublas.so.*')})))" 2>/dev/null)
echo "NVIDIA's cuBLAS from: ${NVLIB:-NOT FOUND}"
[ -n "$NVLIB" ] || exit 1
ls "${NVLIB%%:*}" | grep -i cublas

native() {   # NAME: run DIR/NAME with NVIDIA's libraries
  LD_LIBRARY_PATH=$NVLIB:$PWD/$DIR/lib timeout 300 "$DIR/$1" > "$OUT/$1.native.out" 2> "$OUT/$1.native.err"
  echo "exit $?" >> "$OUT/$1.native.err"
}
under_ptxport() {
  LD_LIBRARY_PATH=$NVLIB:$PWD/$DIR/lib timeout 300 python3 -m ptxport.cli run --device $DEVICE -- \
    "$DIR/$1" > "$OUT/$1.ptxport.out" 2> "$OUT/$1.ptxport.err"
  echo "exit $?" >> "$OUT/$1.ptxport.err"
}

for p in $PROGRAMS; do
  native $p
  under_ptxport $p
  for how in native ptxport; do
    if diff -u "tests/programs/expected/$p.txt" "$OUT/$p.$how.out" > "$OUT/$p.$how.diff"; then
      echo "== $p $how: matches expected/$p.txt ($(tail -1 "$OUT/$p.$how.err"))"
    else
      echo "== $p $how: DIFFERS from expected/$p.txt ($(tail -1 "$OUT/$p.$how.err"))"
      cat "$OUT/$p.$how.diff"
    fi
    grep -E "^note:" "$OUT/$p.$how.err" | sed "s/^/   $how /"
  done
done

native cublas_probe
under_ptxport cublas_probe
echo "== probe: NVIDIA's answers ($(tail -1 "$OUT/cublas_probe.native.err"))"
cat "$OUT/cublas_probe.native.out"
echo "== probe: native vs ptxport ($(tail -1 "$OUT/cublas_probe.ptxport.err"))"
diff -u "$OUT/cublas_probe.native.out" "$OUT/cublas_probe.ptxport.out" > "$OUT/cublas_probe.diff"
python3 - "$OUT/cublas_probe.native.out" "$OUT/cublas_probe.ptxport.out" <<'PYEOF'
import sys
# ptxport's deliberate differences (docs/compat.md, "Deliberate differences from NVIDIA's
# cuBLAS 13"): NVIDIA's library returns SUCCESS for arguments its documentation calls
# invalid; ptxport keeps CUBLAS_STATUS_INVALID_VALUE.
EXPECTED = {"sgemv m -1", "sgemv trans 7", "sgemv incy 0", "? sgemv n -1"}


def calls(path):
    """label -> (the xerbla lines printed before it, its status), in the probe's order"""
    answers, pending = {}, []
    for line in open(path).read().splitlines():
        if line.startswith(" ** "):
            pending.append(line.strip())
            continue
        label, _, status = line.rpartition(": ")
        answers[label] = (pending, status)
        pending = []
    return answers


def show(answer):
    lines, status = answer or ([], "(no answer)")
    return " / ".join([*lines, status])


native, ours = calls(sys.argv[1]), calls(sys.argv[2])
counts = {"same": 0, "expected": 0, "new": 0, "unexpected": 0}
for label in [*native, *(label for label in ours if label not in native)]:
    a, b = native.get(label), ours.get(label)
    if a == b:
        counts["same"] += 1
        if label in EXPECTED:
            print(f"   NOW THE SAME (docs/compat.md lists it as a difference): {label}")
        continue
    if label in EXPECTED:
        counts["expected"] += 1
        kind = "expected difference (docs/compat.md)"
    elif label.startswith("? "):
        counts["new"] += 1
        kind = "DIFFERS, a call not run natively before (ptxport predicted wrongly)"
    else:
        counts["unexpected"] += 1
        kind = "DIFFERS"
    print(f"   {kind}: {label}\n      NVIDIA:  {show(a)}\n      ptxport: {show(b)}")
print("   probe: {same} calls the same, {expected} expected differences, {new} differences in "
      "new calls, {unexpected} unexpected differences".format(**counts))
PYEOF
tar -czf "$RESULTS/cublas_native.tar.gz" -C "$OUT" . && echo "(all outputs: cublas_native.tar.gz)"
