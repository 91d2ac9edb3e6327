"""Code generation: IR -> LLVM IR -> each target's machine code (one module per target)."""
