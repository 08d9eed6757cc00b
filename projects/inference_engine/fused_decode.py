"""The lean decode step for batch ≤ 16 on the GPU: five kernels per layer, the residual stream updated in place,
each kernel a programmatic dependent of the one before (pdl.py).

    h = embed(ids)                                           # h: [B, hidden], the residual stream
    per layer:
        qkv = rmsnorm(h) @ Wqkv.T                            fused_linear, norm prologue
        cache[slot] <- rope(k), v; o = attention(rope(q))    rope_paged_decode_triton (one kernel)
        h  += o @ Wo.T                                       fused_linear, residual epilogue
        a   = silu(rmsnorm(h) @ Wg.T) * (rmsnorm(h) @ Wu.T)  fused_linear, norm prologue + SiLU·mul epilogue
        h  += a @ Wd.T                                       fused_linear, residual epilogue
    logits = rmsnorm(h) @ Wlm.T                              fused_linear, norm prologue, fp32 out

The same arithmetic, rounding for rounding, as ``LlamaForCausalLM.forward`` + ``compute_logits`` (model.py),
which keeps (x, residual) pairs and adds them inside the next norm: here the add happens in the GEMV that
produced x. Prefill and larger batches keep that path (cuBLAS GEMMs).
"""
from __future__ import annotations

import torch

from .triton_gemv import fused_linear
from .triton_ops import rope_store
from .triton_paged_attention import paged_decode_triton, rope_paged_decode_triton


def decode_logits(model, input_ids: torch.Tensor, positions: torch.Tensor,
                  kv_caches: list[tuple[torch.Tensor, torch.Tensor]], block_tables: torch.Tensor,
                  context_lens: torch.Tensor) -> torch.Tensor:
    """input_ids, positions: [B]; block_tables: [B, W] int32; context_lens: [B] int32 (this token included)
    -> logits [B, vocab] fp32."""
    cfg = model.config
    eps, pdl = cfg.rms_norm_eps, model.kernels.pdl
    h = model.embed_tokens(input_ids)
    for layer, (k_cache, v_cache) in zip(model.layers, kv_caches):
        attn, mlp = layer.self_attn, layer.mlp
        qkv = fused_linear(h, attn.qkv_proj.weight, norm_weight=layer.input_layernorm.weight, eps=eps, pdl=pdl)
        if model.kernels.rope_in_attention and attn.head_dim >= 32:  # RoPE and the K/V store in the attention
            o = rope_paged_decode_triton(qkv, positions, attn.rope.cos_sin, k_cache, v_cache, block_tables,
                                         context_lens, attn.scale, attn.num_heads, pdl=pdl)
        else:  # its split dot needs head_dim / 2 >= 16
            q, _ = rope_store(qkv, positions, attn.rope.cos_sin, None, k_cache, v_cache, attn.num_heads,
                              attn.num_kv_heads, attn.head_dim, block_tables=block_tables)
            o = paged_decode_triton(q, k_cache, v_cache, block_tables, context_lens, attn.scale)
        fused_linear(o.view(o.shape[0], -1), attn.o_proj.weight, residual=h, pdl=pdl)
        a = fused_linear(h, mlp.gate_up_proj.weight, norm_weight=layer.post_attention_layernorm.weight, eps=eps,
                         silu_mul=True, pdl=pdl)
        fused_linear(a, mlp.down_proj.weight, residual=h, pdl=pdl)
    return fused_linear(h, model.lm_head.weight, norm_weight=model.norm.weight, eps=eps, out_dtype=torch.float32,
                        pdl=pdl)
