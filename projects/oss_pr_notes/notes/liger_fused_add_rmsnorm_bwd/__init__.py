"""Note: several programs per SM in Liger-Kernel's fused add + RMSNorm backward (see note.md)."""
