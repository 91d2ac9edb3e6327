"""tests/background.py, the queue of slow work that test modules start when collection ends:
one job at a time unless allowed more, and nothing left running once the session stops.
Each check runs in a fresh interpreter, since the queue belongs to its process (this one's
is the session's own)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=HERE,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_one_job_at_a_time_until_more_are_allowed():
    out = _python("""
        import threading, time
        import background
        running, most = [0], [0]
        lock = threading.Lock()
        def job():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.2)
            with lock:
                running[0] -= 1
        for f in [background.submit(job) for _ in range(3)]:
            f.result()
        print(most[0])
        background.allow(2)
        most[0] = 0
        for f in [background.submit(job) for _ in range(4)]:
            f.result()
        print(most[0])
    """)
    assert out.split() == ["1", "2"]


def test_stop_ends_commands_under_way_and_drops_the_rest():
    out = _python("""
        import sys, time
        import background
        sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
        first = background.submit(background.run, sleep, 120)
        second = background.submit(background.run, sleep, 120)
        time.sleep(2)
        start = time.perf_counter()
        background.stop()
        print(first.result(timeout=10).returncode, second.cancelled(),
              round(time.perf_counter() - start))
    """)
    returncode, cancelled, seconds = out.split()
    assert int(returncode) < 0 and cancelled == "True" and int(seconds) < 10


def test_a_command_past_its_time_is_ended_and_says_so():
    out = _python("""
        import sys
        import background
        sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
        result = background.submit(background.run, sleep, 1).result(timeout=30)
        print(result.returncode, result.stderr.strip())
    """)
    assert out.strip() == "-1 (timed out after 1 s)"
