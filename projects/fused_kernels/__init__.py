"""fused_kernels: see README.md beside this file."""
