"""Attention over the paged KV cache: the cache write, prefill attention, and decode attention.

Two decode paths share one contract (``paged_decode``): the Triton kernel on CUDA tensors, and a pure-PyTorch
reference that gathers each sequence's blocks — the CPU path and the tests' oracle.

Prefill attention runs per sequence (``PrefillAttention``): with no cached prefix over the sequence's own
q/k/v; with a cached prefix (prefix-cache hit or a later chunk of a chunked prefill) over K/V gathered from its
blocks, causal with an offset: query i of n attends to the first (ctx - n + i + 1) keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F


@dataclass
class AttentionMetadata:
    is_prefill: bool
    block_size: int
    # slot_mapping: [T] int64, flat slot (block * block_size + offset) where each token's K/V is written
    slot_mapping: torch.Tensor
    # block_tables: [B, W] int32 — block_table: [seq, logical_block] -> physical_block (padded with a scratch block)
    block_tables: torch.Tensor
    # context_lens: [B] int32, tokens with K/V once this step's are written
    context_lens: torch.Tensor
    # prefill only, on the host: new tokens per sequence, and context (cached + new) per sequence
    query_lens: Optional[list[int]] = None
    context_lens_host: Optional[list[int]] = None
    # prefill, filled on first use by the varlen kernel: [2, B + 1] int32, cumulative query and context lengths
    cu_seqlens: Optional[torch.Tensor] = None


def write_kv(k, v, k_cache, v_cache, slot_mapping) -> None:
    # k: [T, Hkv, D] into k_cache: [num_blocks, block_size, Hkv, D] viewed as [slots, Hkv, D]
    k_cache.view(-1, *k_cache.shape[2:]).index_copy_(0, slot_mapping, k)
    v_cache.view(-1, *v_cache.shape[2:]).index_copy_(0, slot_mapping, v)


# -- decode --------------------------------------------------------------------------------------------

def paged_decode(q, k_cache, v_cache, block_tables, context_lens, scale: float, use_triton: bool) -> torch.Tensor:
    if use_triton:
        from .triton_paged_attention import paged_decode_triton
        return paged_decode_triton(q, k_cache, v_cache, block_tables, context_lens, scale)
    return paged_decode_reference(q, k_cache, v_cache, block_tables, context_lens, scale)


def paged_decode_reference(q, k_cache, v_cache, block_tables, context_lens, scale: float) -> torch.Tensor:
    """q: [B, H, D] -> [B, H, D]; gathers every sequence's whole block table, masks past context_lens."""
    B, H, D = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    blocks = block_tables.long()
    k = k_cache[blocks].reshape(B, -1, Hkv, D)  # [B, W*bs, Hkv, D]
    v = v_cache[blocks].reshape(B, -1, Hkv, D)
    group = H // Hkv
    qf = q.float().view(B, Hkv, group, D)
    s = torch.einsum("bkgd,bnkd->bkgn", qf, k.float()) * scale
    valid = torch.arange(k.shape[1], device=q.device)[None, :] < context_lens[:, None]  # [B, N]
    s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)  # context 0 (padding rows): all -inf -> zeros
    o = torch.einsum("bkgn,bnkd->bkgd", p, v.float())
    return o.reshape(B, H, D).to(q.dtype)


# -- prefill -------------------------------------------------------------------------------------------

def _gpufolio_flash():
    """``flash_attention(q, k, v, causal, scale)`` from projects/flash_attention ([B, H, S, D], GQA, causal
    aligned bottom-right) if importable; None otherwise."""
    try:
        from gpufolio_projects.flash_attention.attention import flash_attention
    except Exception:  # noqa: BLE001 — any failure to import means "use SDPA"
        return None
    return flash_attention


def _sdpa(q, k, v, scale, mask=None):
    """q: [n, H, D], k/v: [m, Hkv, D] -> [n, H, D]; causal (top-left, n == m) unless a mask is given."""
    group = q.shape[1] // k.shape[1]
    if group > 1:  # expand K/V heads: the fused SDPA kernels take equal head counts on every torch we run
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    q4, k4, v4 = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))  # [1, H, n, D]: 4-D for the fused kernels
    o = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask, is_causal=mask is None, scale=scale)
    return o[0].transpose(0, 1)


class PrefillAttention:
    """Causal attention for a prefill step. On a GPU in bf16/fp16: PyTorch's FlashAttention-2 varlen kernel,
    one launch per layer for the whole step (``varlen``). Otherwise per sequence: our Triton FlashAttention when
    that project is importable and agrees with SDPA on a self-test at first use, else SDPA (flash backend
    without a prefix, a boolean mask with one). ``backend`` names the one that ran last."""

    def __init__(self, allow_gpufolio: bool = True, varlen: bool = True):
        self.allow_gpufolio = allow_gpufolio
        # GPU, bf16/fp16: the whole step's attention in one FlashAttention-2 varlen launch per layer
        self.varlen = varlen
        self.varlen_error: Optional[str] = None
        self._flash = None
        self._checked = False
        self.backend = "sdpa"

    def _flash_for(self, q):
        if not (self.allow_gpufolio and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16)):
            return None
        if not self._checked:
            self._checked = True
            fn = _gpufolio_flash()
            if fn is not None and self._self_test(fn, q):
                self._flash, self.backend = fn, "gpufolio_flash_attention"
        return self._flash

    @staticmethod
    def _self_test(fn, like) -> bool:
        g = torch.Generator(device=like.device).manual_seed(0)
        H, D = like.shape[1], like.shape[2]
        q = torch.randn(1, H, 100, D, generator=g, device=like.device, dtype=like.dtype)
        k = torch.randn(1, max(H // 4, 1), 150, D, generator=g, device=like.device, dtype=like.dtype)
        v = torch.randn_like(k)
        try:
            out = fn(q, k, v, causal=True, scale=D ** -0.5)
        except Exception:  # noqa: BLE001 — an interface or shape it refuses: SDPA it is
            return False
        mask = torch.arange(150, device=q.device)[None, :] <= torch.arange(50, 150, device=q.device)[:, None]
        ref = _sdpa(q[0].transpose(0, 1).float(), k[0].transpose(0, 1).float(), v[0].transpose(0, 1).float(),
                    D ** -0.5, mask)
        return bool((out[0].transpose(0, 1).float() - ref).abs().max() < 2e-2)

    def __call__(self, q, k, v, k_cache, v_cache, meta: AttentionMetadata, scale: float) -> torch.Tensor:
        """q: [T, H, D] (T = sum of query_lens), k/v: this step's [T, Hkv, D] (already written to the cache)."""
        if self.varlen and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
            try:
                out = _varlen_flash(q, k, v, k_cache, v_cache, meta, scale)
                self.backend = "flash_varlen"
                return out
            except (RuntimeError, TypeError) as e:  # a torch without the op or these arguments: per sequence
                self.varlen, self.varlen_error = False, f"{type(e).__name__}: {e}"
        out = torch.empty_like(q)
        flash = self._flash_for(q)
        bs = meta.block_size
        start = 0
        for i, (n, ctx) in enumerate(zip(meta.query_lens, meta.context_lens_host)):
            qi = q[start:start + n]
            if ctx == n:
                ki, vi = k[start:start + n], v[start:start + n]
            else:  # a cached prefix: this sequence's keys come from its blocks
                blocks = meta.block_tables[i, : -(-ctx // bs)].long()
                ki = k_cache[blocks].flatten(0, 1)[:ctx]  # [ctx, Hkv, D]
                vi = v_cache[blocks].flatten(0, 1)[:ctx]
            if flash is not None:
                o = flash(qi.transpose(0, 1)[None], ki.transpose(0, 1)[None], vi.transpose(0, 1)[None],
                          causal=True, scale=scale)[0].transpose(0, 1)
            elif ctx == n:
                o = _sdpa(qi, ki, vi, scale)
            else:
                # query j (absolute position ctx - n + j) sees keys 0 .. ctx - n + j
                mask = (torch.arange(ctx, device=q.device)[None, :]
                        <= torch.arange(ctx - n, ctx, device=q.device)[:, None])
                o = _sdpa(qi, ki, vi, scale, mask)
            out[start:start + n] = o
            start += n
        return out


def _gather_context(k, v, k_cache, v_cache, meta: AttentionMetadata):
    """Packed K/V of every sequence's whole context: this step's k/v where nothing is cached, else its blocks."""
    if all(n == c for n, c in zip(meta.query_lens, meta.context_lens_host)):
        return k, v
    bs, ks, vs, start = meta.block_size, [], [], 0
    for i, (n, ctx) in enumerate(zip(meta.query_lens, meta.context_lens_host)):
        if ctx == n:
            ks.append(k[start:start + n])
            vs.append(v[start:start + n])
        else:
            blocks = meta.block_tables[i, : -(-ctx // bs)].long()
            ks.append(k_cache[blocks].flatten(0, 1)[:ctx])
            vs.append(v_cache[blocks].flatten(0, 1)[:ctx])
        start += n
    return torch.cat(ks), torch.cat(vs)


def _varlen_flash(q, k, v, k_cache, v_cache, meta: AttentionMetadata, scale: float) -> torch.Tensor:
    """PyTorch's FlashAttention-2 varlen forward over the packed step: q [T, H, D], K/V [sum ctx, Hkv, D]
    (GQA native). Causal is aligned bottom-right when a sequence has more keys than queries (a cached
    prefix): query j of n sees keys 0 .. ctx - n + j, as the per-sequence path does."""
    kk, vv = _gather_context(k, v, k_cache, v_cache, meta)
    if meta.cu_seqlens is None:  # once per step, not once per layer: it is a host-to-device copy
        lens = torch.tensor([[0, *meta.query_lens], [0, *meta.context_lens_host]], dtype=torch.int32)
        meta.cu_seqlens = lens.cumsum(1, dtype=torch.int32).to(q.device)
    cu_q, cu_k = meta.cu_seqlens
    out = torch.ops.aten._flash_attention_forward(
        q, kk, vv, cu_q, cu_k, max(meta.query_lens), max(meta.context_lens_host), 0.0, True, False, scale=scale)[0]
    return out
