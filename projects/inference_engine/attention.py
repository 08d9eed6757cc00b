"""Attention over the paged KV cache: the cache write, prefill attention, and decode attention.

Two decode paths share one contract (``paged_decode``): the Triton kernel on CUDA tensors, and a pure-PyTorch
reference that gathers each sequence's blocks — the CPU path and the tests' oracle.

Prefill attention runs per sequence: with no cached prefix, the sequence's own q/k/v go to
``gpufolio_projects.flash_attention`` (when importable, on a GPU) or SDPA with a causal mask; with a cached
prefix (prefix-cache hit or a later chunk of a chunked prefill) K/V are gathered from the cache and the mask is
causal with an offset: query i of n attends to the first (ctx - n + i + 1) keys.
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


def write_kv(k, v, k_cache, v_cache, slot_mapping) -> None:
    # k: [T, Hkv, D] into k_cache: [num_blocks, block_size, Hkv, D] viewed as [slots, Hkv, D]
    k_cache.view(-1, *k_cache.shape[2:]).index_copy_(0, slot_mapping, k)
    v_cache.view(-1, *v_cache.shape[2:]).index_copy_(0, slot_mapping, v)


# -- decode --------------------------------------------------------------------------------------------

def paged_decode(q, k_cache, v_cache, block_tables, context_lens, scale: float) -> torch.Tensor:
    if q.is_cuda:
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

def _flash_attention_fn():
    """Our own Triton FlashAttention (projects/flash_attention) if it is importable; None otherwise."""
    try:
        from gpufolio_projects.flash_attention import ops  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 — any failure to import means "use SDPA"
        return None
    return getattr(ops, "flash_attention", None)


_FLASH = None
_FLASH_TRIED = False


def _causal_attention(q, k, v, scale):
    """q: [n, H, D], k/v: [n, Hkv, D] -> [n, H, D], causal."""
    global _FLASH, _FLASH_TRIED
    if q.is_cuda and not _FLASH_TRIED:
        _FLASH, _FLASH_TRIED = _flash_attention_fn(), True
    group = q.shape[1] // k.shape[1]
    if _FLASH is not None and q.is_cuda:
        try:
            kk, vv = (t.repeat_interleave(group, dim=1) for t in (k, v))
            o = _FLASH(q.transpose(0, 1)[None], kk.transpose(0, 1)[None], vv.transpose(0, 1)[None],
                       causal=True, sm_scale=scale)
            return o[0].transpose(0, 1)
        except Exception:  # noqa: BLE001 — an interface we do not know: stay on SDPA from now on
            _FLASH = None
    o = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                       is_causal=True, scale=scale, enable_gqa=group > 1)
    return o.transpose(0, 1)


def prefill_attention(q, k, v, k_cache, v_cache, meta: AttentionMetadata, scale: float) -> torch.Tensor:
    """q: [T, H, D] (T = sum of query_lens), k/v: this step's [T, Hkv, D] (already written to the cache)."""
    out = torch.empty_like(q)
    bs = meta.block_size
    start = 0
    for i, (n, ctx) in enumerate(zip(meta.query_lens, meta.context_lens_host)):
        qi = q[start:start + n]
        if ctx == n:
            out[start:start + n] = _causal_attention(qi, k[start:start + n], v[start:start + n], scale)
        else:
            blocks = meta.block_tables[i, : -(-ctx // bs)].long()
            ki = k_cache[blocks].flatten(0, 1)[:ctx]  # [ctx, Hkv, D]
            vi = v_cache[blocks].flatten(0, 1)[:ctx]
            # query j (absolute position ctx - n + j) sees keys 0 .. ctx - n + j
            mask = torch.arange(ctx, device=q.device)[None, :] <= torch.arange(ctx - n, ctx, device=q.device)[:, None]
            group = q.shape[1] // ki.shape[1]
            o = F.scaled_dot_product_attention(qi.transpose(0, 1), ki.transpose(0, 1), vi.transpose(0, 1),
                                               attn_mask=mask, scale=scale, enable_gqa=group > 1)
            out[start:start + n] = o.transpose(0, 1)
        start += n
    return out
