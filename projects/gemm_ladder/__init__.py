"""gemm_ladder: see README.md beside this file."""
