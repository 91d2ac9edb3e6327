"""Transformations of the IR, one per file, each exposing `run`."""
