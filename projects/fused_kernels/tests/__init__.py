"""CPU tests (Triton interpreter) and gpu-marked tests for fused_kernels; _ref.py holds the references."""
