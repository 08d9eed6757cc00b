"""On-device sampling: greedy, temperature, top-k, top-p — no host round trip, so it fits in a CUDA graph.

Per-row parameters are tensors ([B]); a temperature of 0 means greedy for that row. Random rows use the
exponential race (argmax of p / E with E ~ Exp(1) picks index i with probability p_i), which needs no cumsum
search and no host sync. Top-k/top-p sort the vocabulary once per row; the greedy-only path skips all of it.

The race's noise is counter-based when rows carry seeds: E for token v of a row is a hash of (the row's seed,
the position being sampled, v), so a request draws the same tokens whatever batch it shares, after a preemption
too, and inside a CUDA graph (seeds and positions are device buffers; no generator state to advance).
"""
from __future__ import annotations

from typing import Optional

import torch

_M32 = 0xFFFFFFFF
_MUL = 0x45D9F3B  # < 2**27: a 32-bit value times it stays inside int64, so nothing overflows


def _mix32_(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (two multiply-xorshift rounds), in place on an int64 tensor of values in [0, 2**32).
    In place because at [B, V] = [256, 128k] each int64 temporary is 256 MiB."""
    for _ in range(2):
        x.bitwise_xor_(x >> 16).mul_(_MUL).bitwise_and_(_M32)
    return x.bitwise_xor_(x >> 16)


def counter_exponential(seeds: torch.Tensor, positions: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Exp(1) noise [B, V] fp32, a pure function of (seeds[b], positions[b], v). seeds, positions: [B] int64 >= 0."""
    key = _mix32_(_mix32_(_mix32_(seeds & _M32) ^ (seeds >> 32)) ^ (positions & _M32))
    token = _mix32_((torch.arange(vocab_size, device=seeds.device) + 0x9E3779B9).bitwise_and_(_M32))
    bits = _mix32_(key[:, None] ^ token[None, :])
    bits >>= 8  # 24 bits: uniform in (0, 1) below, never 0 or 1
    return bits.to(torch.float32).add_(0.5).mul_(2.0**-24).log_().neg_()


class Sampler:
    def __call__(self, logits: torch.Tensor, temperatures: torch.Tensor, top_k: torch.Tensor,
                 top_p: torch.Tensor, greedy_only: bool, seeds: Optional[torch.Tensor] = None,
                 positions: Optional[torch.Tensor] = None) -> torch.Tensor:
        """logits: [B, V] fp32 (greedy_only: any float dtype); temperatures/top_p: [B] fp32; top_k: [B] int
        (V = off); seeds, positions: [B] int64 (the position of the token being sampled), or None for noise from
        torch's global generator -> tokens [B] int64."""
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
        if seeds is None:
            race = torch.empty_like(probs).exponential_()
        else:
            race = counter_exponential(seeds, positions, logits.shape[-1])
        sampled = (probs / race).argmax(dim=-1)
        return torch.where(temperatures == 0, greedy, sampled)
