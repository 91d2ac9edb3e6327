#!/bin/bash
# group2 (issue 20): Ray group launches that scale. Run from the repository root on the GPU
# machine (16 vCPUs), with Ray on the path:  PYTHONPATH=/tmp/raysite:$PWD bash build/dev/group2.sh
# Prints the scaling table for 1/2/4 Ray workers (with the recovery line), then the same
# kernels with --local (cpu members in one process), then what the checksum and diff cost.
# Writes the JSON results to $OUT when it is set. About 2-3 minutes.
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-python3}
KERNELS=${KERNELS:-saxpy,gemm,softmax,stencil,gemm1024,gemm2048,stencil_sweeps}
WORKERS=${WORKERS:-1,2,4}
EXTRA=${EXTRA:-}   # e.g. --quick for a smoke test
echo "== machine: $(nproc) vCPUs, $($PY --version 2>&1), ray $($PY -c 'import ray; print(ray.__version__)' 2>&1 | tail -1), numpy $($PY -c 'import numpy; print(numpy.__version__)'), $(date -u +%H:%M:%SZ)"
echo "== commit: $(git rev-parse --short HEAD 2>/dev/null || echo '(no git)')"
echo "== checksum vs zlib.crc32, 16 MiB (ms, best of 5)"
$PY - <<'PY'
import time, zlib
import numpy as np
from ptxport.runtime.group_plan import changed_ranges
from ptxport.runtime.group_ray import checksum
a = np.random.default_rng(0).integers(0, 255, 16 << 20, dtype=np.uint8)
b = a.copy(); b[::4096] += 1
def best(f):
    times = []
    for _ in range(5):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times) * 1e3
print(f"checksum {best(lambda: checksum(a)):.2f}  zlib.crc32 {best(lambda: zlib.crc32(a)):.2f}  "
      f"changed_ranges {best(lambda: changed_ranges(a, b)):.2f}  copy {best(lambda: a.copy()):.2f}")
PY
echo "== Ray workers 1,2,4 (outputs reset on the host before each timed launch)"
start=$(date +%s)
timeout 200 $PY benchmarks/multidevice.py --workers $WORKERS --reps 3 --kernels $KERNELS $EXTRA 2>&1 \
    | grep -v -e "Token authentication" -e "^(raylet)" -e "A worker died"
echo "(Ray run: rc ${PIPESTATUS[0]}, $(( $(date +%s) - start )) s)"
echo "== --local: cpu members in this process, cores/W threads each"
start=$(date +%s)
timeout 90 $PY benchmarks/multidevice.py --local --workers $WORKERS --reps 3 --kernels $KERNELS $EXTRA 2>&1
echo "(local run: rc $?, $(( $(date +%s) - start )) s)"
if [ -n "${OUT:-}" ]; then cp benchmarks/results/multidevice*.json "$OUT"/ 2>/dev/null; fi
