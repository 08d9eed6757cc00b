"""BF16 tensor-core GEMM ladder (part 2 of gemm_ladder): mma.sync -> wgmma + TMA on Hopper. See README.md."""
