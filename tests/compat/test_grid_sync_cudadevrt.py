"""Grid synchronisation through cudadevrt's functions (cudaCGSynchronize and
cudaCGSynchronizeGrid, which numba-cuda and pre-CUDA 11 cooperative groups call) in a program
built with -rdc=true -lcudadevrt, under `ptxport run --device cpu`: ptxport links its own
definitions where it leaves cudadevrt's unit out (codegen/cooperative_groups.py); a
cooperative launch waits for every block, a plain one stops at the sync with an error naming
why."""

from __future__ import annotations


def test_cudadevrt_grid_sync_waits_for_every_block(build, ptxport_run):
    binary = build("devrt_grid_sync", "-rdc=true", "-lcudadevrt")
    result = ptxport_run(binary)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "cudaCGSynchronize cooperative: cudaSuccess, every thread saw every block arrive: "
        "yes, returned 0: yes",
        "cudaCGSynchronizeGrid cooperative: cudaSuccess, every thread saw every block "
        "arrive: yes, returned 0: yes",
        "plain launch: failed"]
    assert "grid synchronisation in a launch that is not cooperative" in result.stderr
