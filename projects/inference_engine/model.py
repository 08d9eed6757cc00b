"""The Llama architecture in plain PyTorch: RMSNorm, RoPE (with Llama-3 scaling), GQA attention, SwiGLU.

q/k/v projections are fused into one ``qkv_proj`` and gate/up into one ``gate_up_proj`` (one GEMM instead of
three/two: at batch 1 each launch costs about as much as a small GEMV). ``load_hf_weights`` maps the
Hugging Face names (``model.layers.N.self_attn.q_proj.weight`` ...) onto those fused weights.

Tokens are flat: ``input_ids: [T]`` for T tokens of several sequences; the attention metadata says which
token belongs to which sequence and where its K/V goes in the paged cache.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from . import attention
from .attention import AttentionMetadata
from .config import ModelConfig


@dataclass
class KernelChoice:
    """Which implementation the forward runs. One instance is shared by every module and read at call time,
    so a profile can flip it (CUDA graphs must then be captured again)."""

    triton: bool = False  # fused Triton kernels (GPU; CPU under TRITON_INTERPRET) instead of PyTorch ops
    skinny_max_m: int = 16  # with triton: linears of at most this many rows use the Triton GEMV (triton_gemv)
    # with triton: decode batches of at most 16 run fused_decode.decode_logits (norm, residual and SiLU·mul
    # folded into the GEMVs, six kernels per layer) instead of forward + compute_logits
    fused_decode: bool = True
    # in the fused decode step: RoPE and the K/V store inside the attention kernel (head_dim >= 32)
    rope_in_attention: bool = True
    # in the fused decode step: each kernel launched as a programmatic dependent of the one before (pdl.py),
    # so it streams its weights while that one finishes (sm_90+, where Triton supports it)
    pdl: bool = True

    def linear(self, layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        if self.triton and 0 < x.shape[0] <= self.skinny_max_m:
            from .triton_gemv import fused_linear
            return fused_linear(x, layer.weight)
        return layer(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, kernels: Optional[KernelChoice] = None):
        super().__init__()
        self.eps, self.kernels = eps, kernels or KernelChoice()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None):
        """With ``residual``: returns (norm(x + residual), x + residual) — the pre-norm block's add and norm."""
        if self.kernels.triton:
            from .triton_ops import add_rmsnorm
            return add_rmsnorm(x, residual, self.weight, self.eps)
        if residual is not None:
            x = x + residual
            residual = x
        # in fp32 like Hugging Face, then back to the activation dtype before the weight
        xf = x.float()
        y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
        return y if residual is None else (y, residual)


def rope_inv_freq(config: ModelConfig) -> torch.Tensor:
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    s = config.rope_scaling
    if s and s.get("rope_type", s.get("type")) == "llama3":
        # Llama 3.1+: long wavelengths are slowed by `factor`, short ones kept, the band between blended.
        factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        old_len = s["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
        inv_freq = torch.where(medium, blended, scaled)
    return inv_freq.float()


class RotaryEmbedding(nn.Module):
    def __init__(self, config: ModelConfig, max_len: int):
        super().__init__()
        self.config, self.max_len = config, max_len
        self.register_buffer("cos_sin", torch.empty(max_len, config.head_dim), persistent=False)
        self.reset()

    @torch.no_grad()
    def reset(self) -> None:
        """(Re)compute the table, e.g. after ``to_empty`` left the buffer uninitialised."""
        if self.cos_sin.is_meta:
            return
        freqs = torch.outer(torch.arange(self.max_len, dtype=torch.float32), rope_inv_freq(self.config))
        # cos_sin: [max_len, head_dim] = [cos | sin], each head_dim/2 wide, fp32
        self.cos_sin = torch.cat([freqs.cos(), freqs.sin()], dim=-1).to(self.cos_sin.device)

    def forward(self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor):
        # q: [T, H, D], k: [T, Hkv, D]; the non-interleaved (rotate-half) layout Hugging Face Llama uses
        cos, sin = self.cos_sin[positions].unsqueeze(1).chunk(2, dim=-1)
        return _rotate(q, cos, sin), _rotate(k, cos, sin)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, rope: RotaryEmbedding, kernels: KernelChoice,
                 prefill_attention: attention.PrefillAttention):
        super().__init__()
        self.kernels = kernels
        self.prefill_attention = prefill_attention
        self.num_heads, self.num_kv_heads, self.head_dim = (
            config.num_attention_heads, config.num_key_value_heads, config.head_dim)
        self.q_size, self.kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.qkv_proj = nn.Linear(config.hidden_size, self.q_size + 2 * self.kv_size, bias=False)
        self.o_proj = nn.Linear(self.q_size, config.hidden_size, bias=False)
        self.rope = rope
        self.scale = self.head_dim ** -0.5

    def forward(self, positions, x, kv_cache: tuple[torch.Tensor, torch.Tensor], meta: AttentionMetadata):
        qkv = self.kernels.linear(self.qkv_proj, x)
        k_cache, v_cache = kv_cache
        if self.kernels.triton:  # one fused kernel: RoPE on q and k, k and v into the paged cache
            from .triton_ops import rope_store
            q, k = rope_store(qkv, positions, self.rope.cos_sin, meta.slot_mapping, k_cache, v_cache,
                              self.num_heads, self.num_kv_heads, self.head_dim, return_k=meta.is_prefill)
            v = qkv[:, self.q_size + self.kv_size:].view(-1, self.num_kv_heads, self.head_dim)
        else:
            q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
            q = q.view(-1, self.num_heads, self.head_dim)
            k = k.view(-1, self.num_kv_heads, self.head_dim)
            v = v.view(-1, self.num_kv_heads, self.head_dim)
            q, k = self.rope(positions, q, k)
            attention.write_kv(k, v, k_cache, v_cache, meta.slot_mapping)
        if meta.is_prefill:
            o = self.prefill_attention(q, k, v, k_cache, v_cache, meta, self.scale)
        else:
            o = attention.paged_decode(q, k_cache, v_cache, meta.block_tables, meta.context_lens, self.scale,
                                       self.kernels.triton)
        return self.kernels.linear(self.o_proj, o.reshape(-1, self.q_size))


class MLP(nn.Module):
    def __init__(self, config: ModelConfig, kernels: KernelChoice):
        super().__init__()
        self.kernels = kernels
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        gate_up = self.kernels.linear(self.gate_up_proj, x)
        if self.kernels.triton:
            from .triton_ops import silu_mul
            return self.kernels.linear(self.down_proj, silu_mul(gate_up))
        gate, up = gate_up.chunk(2, dim=-1)
        return self.kernels.linear(self.down_proj, nn.functional.silu(gate) * up)


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, rope: RotaryEmbedding, kernels: KernelChoice,
                 prefill_attention: attention.PrefillAttention):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, kernels)
        self.self_attn = Attention(config, rope, kernels, prefill_attention)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, kernels)
        self.mlp = MLP(config, kernels)

    def forward(self, positions, x, residual, kv_cache, meta):
        if residual is None:
            x, residual = self.input_layernorm(x), x
        else:
            x, residual = self.input_layernorm(x, residual)
        x = self.self_attn(positions, x, kv_cache, meta)
        x, residual = self.post_attention_layernorm(x, residual)
        return self.mlp(x), residual


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: ModelConfig, max_len: int, kernels: Optional[KernelChoice] = None,
                 flash_prefill: bool = True):
        """kernels: which implementations run (default: PyTorch ops). flash_prefill: let prefill use
        projects/flash_attention when it is importable (GPU, bf16/fp16)."""
        super().__init__()
        self.kernels = kernels or KernelChoice()
        self.prefill_attention = attention.PrefillAttention(flash_prefill)
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        rope = RotaryEmbedding(config, max_len)
        self.layers = nn.ModuleList(DecoderLayer(config, rope, self.kernels, self.prefill_attention) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, self.kernels)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.tie_weights()

    def tie_weights(self) -> None:
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor,
                kv_caches: list[tuple[torch.Tensor, torch.Tensor]], meta: AttentionMetadata) -> torch.Tensor:
        """input_ids, positions: [T] -> hidden states [T, hidden]."""
        x, residual = self.embed_tokens(input_ids), None
        for layer, kv_cache in zip(self.layers, kv_caches):
            x, residual = layer(positions, x, residual, kv_cache, meta)
        x, _ = self.norm(x, residual)
        return x

    def compute_logits(self, hidden: torch.Tensor, upcast: bool = True) -> torch.Tensor:
        """[T, vocab] logits, fp32 unless ``upcast`` is off (greedy: the argmax of the rounded logits is the same,
        and at batch 256 the fp32 copy alone is ~0.1 ms of a ~2.8 ms step)."""
        logits = self.kernels.linear(self.lm_head, hidden)
        return logits.float() if upcast else logits


# -- weights ---------------------------------------------------------------------------------------------

# Hugging Face name fragment -> (our fused parameter, which shard of it)
_FUSED = {
    "self_attn.q_proj": ("self_attn.qkv_proj", 0), "self_attn.k_proj": ("self_attn.qkv_proj", 1),
    "self_attn.v_proj": ("self_attn.qkv_proj", 2),
    "mlp.gate_proj": ("mlp.gate_up_proj", 0), "mlp.up_proj": ("mlp.gate_up_proj", 1),
}


def _shard_rows(config: ModelConfig, fused: str) -> list[int]:
    if fused.endswith("qkv_proj"):
        kv = config.num_key_value_heads * config.head_dim
        return [config.num_attention_heads * config.head_dim, kv, kv]
    return [config.intermediate_size, config.intermediate_size]


@torch.no_grad()
def load_hf_weights(model: LlamaForCausalLM, path: str) -> None:
    """Load every ``*.safetensors`` file of a Hugging Face Llama checkpoint directory into ``model``."""
    import glob
    import os

    from safetensors import safe_open

    params = dict(model.named_parameters(remove_duplicate=False))
    loaded: set[str] = set()
    files = sorted(glob.glob(os.path.join(path, "*.safetensors")))
    if not files:
        raise FileNotFoundError(f"no *.safetensors in {path}")
    for file in files:
        with safe_open(file, framework="pt", device="cpu") as f:
            for hf_name in f.keys():
                name = hf_name.removeprefix("model.")
                if "rotary_emb" in name:
                    continue
                tensor = f.get_tensor(hf_name)
                for frag, (fused, shard) in _FUSED.items():
                    if frag in name:
                        target = name.replace(frag, fused)
                        rows = _shard_rows(model.config, fused)
                        start = sum(rows[:shard])
                        params[target].narrow(0, start, rows[shard]).copy_(tensor)
                        loaded.add(f"{target}#{shard}")
                        break
                else:
                    if name not in params:
                        raise KeyError(f"checkpoint tensor {hf_name} has no place in the model")
                    params[name].copy_(tensor)
                    loaded.add(name)
    expected = set()
    for name in params:
        if name == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        fused = next((f for f, _ in _FUSED.values() if name.endswith(f + ".weight")), None)
        if fused is None:
            expected.add(name)
        else:
            expected.update(f"{name}#{i}" for i in range(len(_shard_rows(model.config, fused))))
    missing = expected - loaded
    if missing:
        raise KeyError(f"checkpoint lacks {sorted(missing)[:5]} ({len(missing)} tensors)")


@torch.no_grad()
def random_init_(model: LlamaForCausalLM, seed: int, std: float = 0.02) -> None:
    """N(0, std) weights, unit norms; drawn on the parameters' device (a 1B model in seconds on a GPU)."""
    device = next(model.parameters()).device
    g = torch.Generator(device=device).manual_seed(seed)
    for name, p in model.named_parameters():
        if name.endswith("layernorm.weight") or name == "norm.weight":
            p.fill_(1.0)
        else:
            p.copy_(torch.randn(p.shape, generator=g, device=device, dtype=torch.float32).mul_(std))


@torch.no_grad()
def save_hf_checkpoint(model: LlamaForCausalLM, path: str) -> None:
    """Write ``model`` as a Hugging Face Llama directory (config.json + model.safetensors, unfused names)."""
    import json
    import os

    from safetensors.torch import save_file

    cfg = model.config
    os.makedirs(path, exist_ok=True)
    out: dict[str, torch.Tensor] = {}
    for name, p in model.named_parameters():
        fused = next((f for f in ("self_attn.qkv_proj", "mlp.gate_up_proj") if f in name), None)
        if fused is None:
            out["model." + name if name != "lm_head.weight" else name] = p.detach().cpu().contiguous()
            continue
        parts = p.detach().cpu().split(_shard_rows(cfg, fused), dim=0)
        frags = [frag for frag, (f, _) in _FUSED.items() if f == fused]
        for frag, part in zip(frags, parts):
            out["model." + name.replace(fused, frag)] = part.contiguous()
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({**cfg.to_hf_dict(), "torch_dtype": str(next(model.parameters()).dtype).removeprefix("torch.")}, f, indent=1)
    save_file(out, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
