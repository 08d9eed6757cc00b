"""On-device sampling: greedy, temperature, top-k, top-p — no host round trip, so it fits in a CUDA graph.

Per-row parameters are tensors ([B]); a temperature of 0 means greedy for that row. Random rows use the
exponential race (argmax of p / E with E ~ Exp(1) picks index i with probability p_i), which needs no cumsum
search and no host sync. Top-k/top-p sort the vocabulary once per row; the greedy-only path skips all of it.
"""
from __future__ import annotations

import torch


class Sampler:
    def __call__(self, logits: torch.Tensor, temperatures: torch.Tensor, top_k: torch.Tensor,
                 top_p: torch.Tensor, greedy_only: bool) -> torch.Tensor:
        """logits: [B, V] fp32 (greedy_only: any float dtype); temperatures/top_p: [B] fp32; top_k: [B] int
        (V = off) -> tokens [B] int64."""
        if logits.is_cuda:  # Triton's two-stage argmax: torch's spends ~25 µs on one 128k row
            from .triton_ops import greedy_argmax  # imported late: TRITON_INTERPRET is read at import
            greedy = greedy_argmax(logits)
        else:
            greedy = logits.argmax(dim=-1)
        if greedy_only:
            return greedy
        scaled = logits / temperatures.clamp_min(1e-5)[:, None]
        sorted_logits, order = scaled.sort(dim=-1, descending=True)
        rank = torch.arange(logits.shape[-1], device=logits.device)[None, :]
        probs_sorted = sorted_logits.softmax(dim=-1)
        # keep a token while the mass before it is < top_p (so the top token always stays), and rank < top_k
        drop = ((probs_sorted.cumsum(dim=-1) - probs_sorted) >= top_p[:, None]) | (rank >= top_k[:, None])
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        probs = torch.empty_like(scaled).scatter_(-1, order, sorted_logits.softmax(dim=-1))
        race = torch.empty_like(probs).exponential_()
        sampled = (probs / race).argmax(dim=-1)
        return torch.where(temperatures == 0, greedy, sampled)
