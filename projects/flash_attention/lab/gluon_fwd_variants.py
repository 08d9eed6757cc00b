"""Variants of the Gluon forward (``kernels/gluon_fwd.py``) not yet in the kernel, each a set of its helpers to
swap in (``kernel_variant.rebound``), for the compile report (``gluon_compile --variant``) and the probe
(``gluon_probe --fwd-settings``) to compile, check and time beside the kernel as committed.

"short max, shuffled sum": the short-chain softmax (``SHORT_CHAINS``) keeps its split row max but goes back to
one running row sum, added across the quad by two shuffles every key block, instead of per-lane partial sums
added once in the epilogue. In the compiled SASS of the committed short chains, ptxas places nearly every
exponential after the turn's try-wait; with the shuffles back, the D = 128 kernels place them as the committed
kernels do, and the D = 64 ones above the try-wait again (the compile report in ``evidence/`` has the counts).
Whether that placement is what the short chains lost at D = 128 is what timing this variant tells.
"""
from __future__ import annotations

import functools

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ..kernels.gluon_fwd import _row_max


@gluon.jit
def _short_max_shuffled_sum(z, m_i, l_i, qk_scale, rows_layout: gl.constexpr):
    """``_online_softmax`` (LEAN) with the row max in short chains and one running row sum:
    (P, new running max, new running sum, alpha)."""
    m_new = gl.maximum(m_i, _row_max(z, rows_layout) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(z * qk_scale - m_new[:, None])
    return p, m_new, l_i * alpha + gl.sum(p, 1), alpha


@gluon.jit
def _row_sums(p):
    """The running row sum's start, [BLOCK_M] (the kernel passes zeros)."""
    return gl.sum(p, 1)


@gluon.jit
def _as_rows(l_i, rows_layout: gl.constexpr):
    """The running row sum, already whole: only its layout to match."""
    return gl.convert_layout(l_i, rows_layout)


# name -> the gluon_fwd helpers it replaces (they run where SHORT_CHAINS is on for the head dim).
FWD_VARIANTS = {"short max, shuffled sum": {"_online_softmax_short": _short_max_shuffled_sum,
                                            "_row_partial_sums": _row_sums, "_row_total": _as_rows}}


@functools.cache
def forward(name: str | None = None):
    """The forward module as committed (``None``), or a copy of it with variant ``name``'s helpers in place:
    either way with ``gluon_attention_fwd``, ``_attn_fwd_ws_kernel``, ``kernel_args`` and its tables."""
    from ..kernels import gluon_fwd
    from .kernel_variant import rebound

    if name is None:
        return gluon_fwd
    if name not in FWD_VARIANTS:
        raise ValueError(f"no forward variant {name!r}; there are: {', '.join(FWD_VARIANTS)}")
    return rebound(gluon_fwd, **FWD_VARIANTS[name])
