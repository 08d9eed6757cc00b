"""One config dataclass per component, validated in ``__post_init__``; every default is defined here once.

    ModelConfig      the Llama architecture (read from a Hugging Face ``config.json`` or built by hand)
    CacheConfig      the paged KV cache: block size, how much free GPU memory it may take, prefix caching
    SchedulerConfig  continuous batching: sequences and tokens per step, multi-step decode
    EngineConfig     device, dtype, CUDA graphs, and the three above
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class ModelConfig:
    vocab_size: int = 128256
    hidden_size: int = 2048
    intermediate_size: int = 8192
    num_hidden_layers: int = 16
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    head_dim: Optional[int] = None  # None: hidden_size // num_attention_heads
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    # Llama-3 frequency-dependent scaling: {"rope_type": "llama3", "factor", "low_freq_factor",
    # "high_freq_factor", "original_max_position_embeddings"}; None for plain RoPE.
    rope_scaling: Optional[dict] = None
    max_position_embeddings: int = 131072
    tie_word_embeddings: bool = True
    eos_token_id: Optional[int] = None

    def __post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads (GQA groups)")
        if self.head_dim % 2:
            raise ValueError("RoPE needs an even head_dim")
        if self.rope_scaling is not None:
            kind = self.rope_scaling.get("rope_type", self.rope_scaling.get("type"))
            if kind not in ("llama3", "default"):
                raise ValueError(f"rope_scaling type {kind!r} is not supported (llama3 or default)")

    @property
    def num_groups(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads

    def kv_bytes_per_token(self, elem_bytes: int) -> int:
        # K and V, every layer, every KV head: 2 · L · H_kv · D · bytes
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * elem_bytes

    def num_params(self) -> int:
        h, i, v, d = self.hidden_size, self.intermediate_size, self.vocab_size, self.head_dim
        attn = h * d * (self.num_attention_heads * 2 + self.num_key_value_heads * 2)
        layer = attn + 3 * h * i + 2 * h
        head = 0 if self.tie_word_embeddings else v * h
        return self.num_hidden_layers * layer + v * h + h + head

    @classmethod
    def from_hf(cls, path: str) -> "ModelConfig":
        with open(os.path.join(path, "config.json")) as f:
            raw: dict[str, Any] = json.load(f)
        # transformers ≥ 5 writes rope_theta and the scaling into "rope_parameters"; 4.x writes
        # "rope_theta" and "rope_scaling" at the top level. Accept both.
        rope = raw.get("rope_parameters") or raw.get("rope_scaling")
        theta = raw.get("rope_theta", (rope or {}).get("rope_theta", 10000.0))
        scaling = None
        if rope and rope.get("rope_type", rope.get("type", "default")) != "default":
            scaling = {k: v for k, v in rope.items() if k != "rope_theta"}
        eos = raw.get("eos_token_id")
        if isinstance(eos, list):
            eos = eos[0]
        return cls(
            vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"],
            intermediate_size=raw["intermediate_size"], num_hidden_layers=raw["num_hidden_layers"],
            num_attention_heads=raw["num_attention_heads"],
            num_key_value_heads=raw.get("num_key_value_heads", raw["num_attention_heads"]),
            head_dim=raw.get("head_dim"), rms_norm_eps=raw.get("rms_norm_eps", 1e-5), rope_theta=theta,
            rope_scaling=scaling, max_position_embeddings=raw.get("max_position_embeddings", 131072),
            tie_word_embeddings=raw.get("tie_word_embeddings", False), eos_token_id=eos,
        )

    def to_hf_dict(self) -> dict:
        rope = {"rope_type": "default", "rope_theta": self.rope_theta}
        if self.rope_scaling:
            rope = {**self.rope_scaling, "rope_theta": self.rope_theta}
        return {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size, "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers, "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads, "head_dim": self.head_dim,
            "rms_norm_eps": self.rms_norm_eps, "rope_theta": self.rope_theta, "rope_parameters": rope,
            "rope_scaling": self.rope_scaling, "max_position_embeddings": self.max_position_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings, "eos_token_id": self.eos_token_id,
            "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
        }


@dataclass
class CacheConfig:
    block_size: int = 16
    # Fraction of the GPU's total memory the process may hold once the KV pool is allocated.
    gpu_memory_utilization: float = 0.9
    # Fixed number of KV blocks (tests, CPU). None: size the pool from free GPU memory.
    num_blocks: Optional[int] = None
    enable_prefix_caching: bool = True

    def __post_init__(self) -> None:
        if self.block_size < 1 or self.block_size & (self.block_size - 1):
            raise ValueError("block_size must be a power of two")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ValueError("gpu_memory_utilization must be in (0, 1]")
        if self.num_blocks is not None and self.num_blocks < 1:
            raise ValueError("num_blocks must be positive")


@dataclass
class SchedulerConfig:
    max_num_seqs: int = 256
    # Token budget of one step: prompt tokens a prefill step may compute (long prompts are chunked).
    max_num_batched_tokens: int = 8192
    # Decode steps run back to back on the device between two host syncs (1 = sync every token).
    # More steps hide host overhead; new arrivals wait up to this many steps for their prefill.
    num_decode_steps: int = 8

    def __post_init__(self) -> None:
        if self.max_num_seqs < 1 or self.max_num_batched_tokens < 1 or self.num_decode_steps < 1:
            raise ValueError("max_num_seqs, max_num_batched_tokens and num_decode_steps must be positive")


@dataclass
class EngineConfig:
    model: Optional[str] = None  # a Hugging Face directory; None: random weights from model_config
    model_config: Optional[ModelConfig] = None
    device: str = "cuda"
    dtype: str = "bfloat16"
    max_model_len: int = 4096
    cuda_graphs: bool = True
    # "auto": the Triton kernels on a GPU, the PyTorch ops on the CPU; "triton" on the CPU runs them under
    # TRITON_INTERPRET (tests); "torch" on a GPU is the unfused comparison.
    kernels: str = "auto"
    # with Triton kernels: linears with at most this many rows (decode at small batch) use the Triton skinny
    # GEMM instead of cuBLAS; 0 turns it off
    skinny_max_m: int = 16
    # with Triton kernels: decode at batch <= 16 through fused_decode (norm/residual/SiLU·mul in the GEMVs)
    fused_decode: bool = True
    # prefill attention through projects/flash_attention when importable (GPU, bf16/fp16), else SDPA
    flash_prefill: bool = True
    max_graph_batch: int = 256
    seed: int = 0
    cache: CacheConfig = field(default_factory=CacheConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)

    def __post_init__(self) -> None:
        if self.model is None and self.model_config is None:
            raise ValueError("give a model directory or a ModelConfig")
        if self.model_config is None:
            self.model_config = ModelConfig.from_hf(self.model)
        if self.dtype not in ("float32", "float16", "bfloat16"):
            raise ValueError(f"dtype {self.dtype!r}: float32, float16 or bfloat16")
        if self.max_model_len < 2:
            raise ValueError("max_model_len must be at least 2")
        if self.kernels not in ("auto", "triton", "torch"):
            raise ValueError(f"kernels {self.kernels!r}: auto, triton or torch")
        if not 0 <= self.skinny_max_m <= 16:
            raise ValueError("skinny_max_m must be in [0, 16]")
        if self.max_graph_batch < 1:
            raise ValueError("max_graph_batch must be positive")
        # A pool that cannot hold one max_model_len sequence would leave a long request waiting for blocks forever.
        fixed = self.cache.num_blocks
        if fixed is not None and fixed * self.cache.block_size < self.max_model_len:
            raise ValueError(f"cache.num_blocks={fixed} holds {fixed * self.cache.block_size} tokens, fewer than "
                             f"one max_model_len={self.max_model_len} sequence: raise num_blocks or lower "
                             "max_model_len")
