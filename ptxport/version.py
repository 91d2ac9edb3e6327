"""ptxport's version (pyproject.toml says the same); apart, so that any module may read it
without importing the whole package."""

__version__ = "0.1.0"
