"""Triton kernels, their launchers and autograd Functions: one module per op (Liger's layering).

    copy.py                  vectorised device copy (the bandwidth ceiling the norms are measured against)
    add_rmsnorm.py           residual-add + RMSNorm, forward and backward (the RMSNorm kernels live here)
    rmsnorm.py               plain RMSNorm: the same kernels with HAS_RESIDUAL=False
    swiglu.py                silu(gate) * up, forward and backward
    linear_cross_entropy.py  chunked linear + cross-entropy that never holds the T x V logits
    linear_cross_entropy_head.py  its first min(T, d) tokens, computed inside grad_W's own storage
"""
