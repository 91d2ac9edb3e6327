"""Whole-function transformations of the IR, one per module."""
