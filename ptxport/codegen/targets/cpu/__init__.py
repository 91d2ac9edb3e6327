"""The CPU target: PTX kernels as native host code (docs/cpu-target.md)."""
