"""A Llama-style decoder in plain PyTorch: RMSNorm, RoPE, GQA attention through SDPA, SwiGLU MLP.

Shapes: tokens [B, T] -> h [B, T, dim] -> logits [B, T, vocab]. Parameter names follow Llama's
(tok_embeddings, layers.i.attention.wq, ..., norm, output) so a checkpoint reads like one.

The ops that sibling projects can replace (RMSNorm, SwiGLU, attention) go through a ``Kernels`` bundle
chosen once at build time (``kernels.py``): no global switches.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .configs import ModelConfig
from .kernels import Kernels, torch_kernels


def rope_tables(cfg: ModelConfig, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin: [max_seq_len, head_dim // 2] in fp32 (the rotation angles need the mantissa)."""
    half = cfg.head_dim // 2
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, half, device=device, dtype=torch.float32) / half))
    angles = torch.outer(torch.arange(cfg.max_seq_len, device=device, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [B, T, H, D]; rotates the pairs (x[..., :D/2], x[..., D/2:]) in fp32, returns x's dtype.

    Backward needs only cos/sin (constants), so this saves no activation of x's size."""
    T = x.shape[1]
    c, s = cos[:T, None, :], sin[:T, None, :]  # [T, 1, D/2]
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, kernels: Kernels):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._kernels = kernels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._kernels.rmsnorm(x, self.weight, self.eps)

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)


class Attention(nn.Module):
    """fused_qkv: one [dim + 2·kv_dim, dim] weight instead of wq, wk, wv — the same FLOPs in one larger GEMM
    (forward: N = dim + 2·kv_dim; backward: dX is one GEMM with K = dim + 2·kv_dim instead of three GEMMs and
    two adds), and the input is read once instead of three times."""

    def __init__(self, cfg: ModelConfig, kernels: Kernels, fused_qkv: bool = False):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.dim, self.kv_dim = cfg.dim, cfg.kv_dim
        if fused_qkv:
            self.wqkv = nn.Linear(cfg.dim, cfg.dim + 2 * cfg.kv_dim, bias=False)
        else:
            self.wq = nn.Linear(cfg.dim, cfg.dim, bias=False)
            self.wk = nn.Linear(cfg.dim, cfg.kv_dim, bias=False)
            self.wv = nn.Linear(cfg.dim, cfg.kv_dim, bias=False)
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.fused_qkv = fused_qkv
        self._kernels = kernels

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.fused_qkv:
            return self.wqkv(x).split([self.dim, self.kv_dim, self.kv_dim], dim=-1)
        return self.wq(x), self.wk(x), self.wv(x)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = self._qkv(x)
        q = apply_rope(q.reshape(B, T, self.n_heads, self.head_dim), cos, sin)
        k = apply_rope(k.reshape(B, T, self.n_kv_heads, self.head_dim), cos, sin)
        # Fused: v is a slice of the qkv GEMM's output; attention saves v for backward, and a saved slice would
        # keep the whole [T, dim + 2·kv_dim] buffer alive. A contiguous copy keeps only v (as unfused does).
        v = (v.contiguous() if self.fused_qkv else v).reshape(B, T, self.n_kv_heads, self.head_dim)
        # q: [B, H, T, D]; k, v: [B, KV, T, D] — the attention kernel broadcasts KV heads over H/KV query heads.
        o = self._kernels.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.wo(o.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    """fused: w13 = [w1; w3] as one [2·ffn_dim, dim] weight (gate rows first), one GEMM for both."""

    def __init__(self, cfg: ModelConfig, kernels: Kernels, fused: bool = False):
        super().__init__()
        if fused:
            self.w13 = nn.Linear(cfg.dim, 2 * cfg.ffn_dim, bias=False)  # gate | up
        else:
            self.w1 = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)  # gate
            self.w3 = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)  # up
        self.w2 = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)  # down
        self.fused = fused
        self._kernels = kernels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused:
            gate, up = self.w13(x).chunk(2, dim=-1)
        else:
            gate, up = self.w1(x), self.w3(x)
        return self.w2(self._kernels.swiglu(gate, up))


class TransformerBlock(nn.Module):
    def __init__(self, cfg: ModelConfig, kernels: Kernels, fused_proj: bool = False):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps, kernels)
        self.attention = Attention(cfg, kernels, fused_qkv=fused_proj)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps, kernels)
        self.feed_forward = FeedForward(cfg, kernels, fused=fused_proj)
        # Full activation checkpointing of this block: set by parallelize.apply_ac before compile, so that
        # the compiled graph contains the recompute region (see parallelize.py for the order).
        self.checkpointed = False

    def _block(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if self.checkpointed:
            # Only x (the block input) is kept; everything inside is recomputed in backward.
            return checkpoint(self._block, x, cos, sin, use_reentrant=False)
        return self._block(x, cos, sin)


class OutputHead(nn.Module):
    """Final norm, output projection and (with targets) the mean cross-entropy: one module so that it
    compiles as one graph (the logits and the fp32 log-softmax fuse) and shards as one unit."""

    def __init__(self, cfg: ModelConfig, kernels: Kernels):
        super().__init__()
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps, kernels)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def forward(self, h: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.output(self.norm(h))  # [B, T, V]
        if targets is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1))


class Transformer(nn.Module):
    """fused_proj: wqkv and w13 instead of wq/wk/wv and w1/w3 (same parameters and FLOPs, fewer, larger
    GEMMs); the default keeps Llama's separate names."""

    def __init__(self, cfg: ModelConfig, kernels: Kernels | None = None, fused_proj: bool = False):
        super().__init__()
        kernels = kernels or torch_kernels()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        # ModuleDict keyed "0".."L-1" keeps Llama's parameter names and lets per-block wrapping replace entries.
        self.layers = nn.ModuleDict({str(i): TransformerBlock(cfg, kernels, fused_proj)
                                     for i in range(cfg.n_layers)})
        self.head = OutputHead(cfg, kernels)
        cos, sin = rope_tables(cfg)
        # Not persistent: derived from the config, never checkpointed, and rebuilt by init_weights after a
        # meta-device build.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        h = self.tok_embeddings(tokens)
        for layer in self.layers.values():
            h = layer(h, self.rope_cos, self.rope_sin)
        return self.head(h, targets)

    @torch.no_grad()
    def init_weights(self, seed: int) -> None:
        """Deterministic init (after ``to_empty`` on a meta-built model, or to re-seed): N(0, 0.02) for
        embeddings and inputs of each residual branch, depth-scaled std for the outputs (wo, w2), ones for norms."""
        torch.manual_seed(seed)  # seeds every device's generator: the same numbers on CPU and on one GPU rank
        std_out = 0.02 / math.sqrt(2 * self.cfg.n_layers)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(("wo.weight", "w2.weight")):
                nn.init.trunc_normal_(p, std=std_out, a=-3 * std_out, b=3 * std_out)
            else:
                nn.init.trunc_normal_(p, std=0.02, a=-0.06, b=0.06)
        cos, sin = rope_tables(self.cfg, device=self.rope_cos.device)
        self.rope_cos.copy_(cos)
        self.rope_sin.copy_(sin)
