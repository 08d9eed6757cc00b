"""Model sizes, one frozen dataclass per size, validated once in ``__post_init__``.

Names carry the rough size class; ``num_params()`` is the truth (tests print it, the README table reads it).
vocab 256 = byte-level text (the stdlib loss curve); vocab 32000 / 128256 = realistic LM heads for throughput.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    name: str
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int  # SwiGLU hidden width (w1, w3: dim -> ffn_dim; w2: ffn_dim -> dim)
    vocab_size: int
    max_seq_len: int = 2048
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for field_name in ("dim", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "vocab_size", "max_seq_len"):
            if getattr(self, field_name) <= 0:
                raise ValueError(f"{self.name}: {field_name} must be positive")
        if self.dim % self.n_heads:
            raise ValueError(f"{self.name}: dim {self.dim} is not a multiple of n_heads {self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{self.name}: n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"{self.name}: RoPE rotates pairs, head_dim {self.head_dim} must be even")

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    # Parameter counts by group: the FLOPs and memory formulas read these, never re-derive them.
    def attn_params(self) -> int:  # wq, wo: dim x dim; wk, wv: dim x kv_dim (no biases)
        return 2 * self.dim * self.dim + 2 * self.dim * self.kv_dim

    def mlp_params(self) -> int:  # w1, w2, w3
        return 3 * self.dim * self.ffn_dim

    def block_params(self) -> int:  # + two RMSNorm weights
        return self.attn_params() + self.mlp_params() + 2 * self.dim

    def embedding_params(self) -> int:
        return self.vocab_size * self.dim

    def head_params(self) -> int:  # final RMSNorm + untied output projection
        return self.dim + self.vocab_size * self.dim

    def num_params(self) -> int:
        return self.embedding_params() + self.n_layers * self.block_params() + self.head_params()


# tiny: tests and dry runs (CPU). The rest: GPU sizes.
CONFIGS: dict[str, ModelConfig] = {c.name: c for c in (
    ModelConfig("tiny", dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=160, vocab_size=256, max_seq_len=128),
    # ~0.8M, byte-level: a loss curve on real text that a 2-core CPU trains in minutes.
    ModelConfig("byte_small", dim=128, n_layers=4, n_heads=4, n_kv_heads=2, ffn_dim=352, vocab_size=256,
                max_seq_len=256),
    # ~25M, byte-level: the GPU loss curve (hundreds of eager steps in well under a minute on an H200).
    ModelConfig("byte_25m", dim=512, n_layers=8, n_heads=8, n_kv_heads=8, ffn_dim=1408, vocab_size=256,
                max_seq_len=512),
    # ~125M, byte-level: a longer stdlib run.
    ModelConfig("llama_125m", dim=768, n_layers=12, n_heads=12, n_kv_heads=12, ffn_dim=3584, vocab_size=256,
                max_seq_len=1024),
    ModelConfig("llama_350m", dim=1024, n_layers=24, n_heads=16, n_kv_heads=8, ffn_dim=2816, vocab_size=32000),
    # ~1B: the headline (B=8, T=2048). Multi-head (kv = heads) so every SDPA backend, cuDNN included, takes it.
    ModelConfig("llama_1b", dim=2048, n_layers=16, n_heads=16, n_kv_heads=16, ffn_dim=5632, vocab_size=32000),
    # Llama-3-8B shape: 16 bytes/param of training state alone is ~128 GB of a 141 GB H200, leaving no room for
    # a useful batch's activations: it trains sharded (FSDP2 over 8 GPUs: ~16 GB of state per rank).
    ModelConfig("llama_8b", dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, ffn_dim=14336, vocab_size=128256,
                max_seq_len=8192, rope_theta=500000.0),
)}


def get_config(name: str) -> ModelConfig:
    try:
        return CONFIGS[name]
    except KeyError:
        raise KeyError(f"unknown model config {name!r}; known: {sorted(CONFIGS)}") from None
