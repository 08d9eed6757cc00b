"""MFU in one place: FLOPs per token, itemised, and the peaks they are divided by.

Counted (per token, forward + backward, PaLM appendix B style):
  dense   = 6 · N_matmul       every Linear weight: 2 FLOPs/token forward (multiply + add), 4 backward
                               (dX and dW). N_matmul = all Linear weights incl. the untied output head.
  attn    = 12 · L · H · D · T QK^T and P·V: 2·T·D FLOPs each per query per head forward (4·T·D), ×3 with
                               backward. The FULL T×T square, as PaLM and torchtitan count it: a causal kernel
                               skips about half of it, so ``attention_causal`` (the ~half a causal kernel does)
                               is reported beside it.
Excluded: the embedding lookup (a gather, no multiply-add; its weight is not in N_matmul), RMSNorm, RoPE,
SiLU·mul, softmax, residual adds, cross-entropy and the optimizer — elementwise work that is memory-bound and
a rounding error next to the matmuls.

HFU (hardware FLOPs) adds what activation checkpointing recomputes: one more forward of every block except
its last matmul (w2's output is not needed by backward, and checkpoint's early stop / the compiler's partitioner
skip it), 2 · (N_block_matmul - dim·ffn) · L + 4 · L · H · D · T per token; the output head is not recomputed.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpufolio import datasheets

from .configs import ModelConfig


def peak_flops(gpu_name: str) -> float:
    """The datasheet bf16 dense peak, FLOP/s, of a device named as the stamp names it ('NVIDIA H200'), from the
    harness's one table (gpufolio.datasheets); KeyError for an unlisted card, never a made-up default."""
    tflops = datasheets.peak(gpu_name, "bf16_tflops")
    if tflops is None:
        raise KeyError(f"no datasheet bf16 peak for {gpu_name!r}; listed: {sorted(datasheets.DATASHEETS)}")
    return tflops * 1e12


@dataclass(frozen=True)
class FlopsPerToken:
    dense: float             # 6 · N_matmul
    attention: float         # 12 · L · H · D · T (full square)
    attention_causal: float  # the part a causal kernel computes: 12 · L · H · D · (T + 1) / 2
    recompute: float         # extra hardware FLOPs under full activation checkpointing (0 without)

    @property
    def model(self) -> float:
        """Model FLOPs per token: the MFU numerator (PaLM convention)."""
        return self.dense + self.attention

    @property
    def model_causal(self) -> float:
        return self.dense + self.attention_causal

    @property
    def hardware(self) -> float:
        """Hardware FLOPs per token (HFU numerator): model FLOPs plus recomputation."""
        return self.model + self.recompute


def matmul_params(cfg: ModelConfig) -> int:
    """Weights that take part in a matmul: every block's Linear layers and the output head (not the
    embedding table, not the norms)."""
    return cfg.n_layers * (cfg.attn_params() + cfg.mlp_params()) + cfg.vocab_size * cfg.dim


def flops_per_token(cfg: ModelConfig, seq_len: int, activation_checkpointing: bool = False) -> FlopsPerToken:
    L, H, D, T = cfg.n_layers, cfg.n_heads, cfg.head_dim, seq_len
    dense = 6.0 * matmul_params(cfg)
    attention = 12.0 * L * H * D * T
    recompute = 0.0
    if activation_checkpointing:
        recomputed_params = cfg.attn_params() + cfg.mlp_params() - cfg.dim * cfg.ffn_dim  # all but w2
        recompute = 2.0 * L * recomputed_params + 4.0 * L * H * D * T
    return FlopsPerToken(dense, attention, 12.0 * L * H * D * (T + 1) / 2, recompute)


def mfu(flops_per_token_: float, tokens_per_s: float, n_gpus: int, peak: float) -> float:
    """Fraction of ``n_gpus`` x ``peak`` that ``tokens_per_s`` (global) achieves."""
    return flops_per_token_ * tokens_per_s / (n_gpus * peak)
