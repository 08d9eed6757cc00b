"""Note: a multi-row fused add + RMSNorm forward for Liger-Kernel (see note.md)."""
