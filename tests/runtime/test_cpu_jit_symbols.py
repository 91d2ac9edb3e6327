"""A kernel whose object code calls into libc (%globaltimer: clock_gettime) loads as the first
thing a process runs on the CPU device, before any other LLVM engine exists."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import numpy as np
    from ptxport import LaunchConfig
    from tests.cpu_harness import kernel_ptx, launch_on_cpu
    body = '''
        .reg .b64 %rd<4>;
        ld.param.u64 %rd1, [out];
        cvta.to.global.u64 %rd1, %rd1;
        mov.u64 %rd2, %globaltimer;
        st.global.u64 [%rd1], %rd2;
        ret;'''
    out = np.zeros(1, np.uint64)
    launch_on_cpu(kernel_ptx(body, ".param .u64 out"), LaunchConfig(grid=1, block=1), out)
    print(int(out[0]))
""")


def test_first_kernel_of_a_process_reads_globaltimer(tmp_path):
    # a cache of its own: the image is compiled, then loaded in a second process (the path
    # where no engine had been made before the symbols were looked up)
    env = {"PTXPORT_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        # nanoseconds of CLOCK_REALTIME: after 2020
        assert int(done.stdout.split()[-1]) > 1_577_836_800 * 10**9
