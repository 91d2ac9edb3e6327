"""Passes: IR -> IR transformations, one per file, each exposing `run(...)`.

block_range: a kernel that computes a sub-range of a launch's blocks (device groups).
"""
