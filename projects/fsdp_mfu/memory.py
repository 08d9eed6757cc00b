"""Predicted peak bytes per rank, by formula, for what each mode actually keeps (trainer.py's precision table).

Training state (bytes per parameter, N = all parameters, W = ranks):
                         params      grads            AdamW (exp_avg, exp_avg_sq)   kept between steps
  single, autocast bf16  4 (fp32)    4 (fp32)          8 (fp32)                       12 (grads freed by
                                                                                          zero_grad(set_to_none))
  ddp, autocast bf16     4           4 (bucket views,  8                              16 (buckets persist)
                                     persistent)
  fsdp2, bf16 compute    4/W (fp32   4/W (fp32         8/W                            12/W
                         master)     after reduce-
                                     scatter)
i.e. the classic 16 bytes/param of mixed-precision Adam, of which we keep 12 between steps (gradients exist
only from backward to optimizer step). On top, the bf16 *compute copies* of weights that exist at the peak:
autocast's bf16 cast of every matmul weight (2 bytes each, saved for backward, eager and compiled alike),
and FSDP2's all-gathered bf16 parameters
(root group always; the blocks being computed; every block with reshard_after_forward=False).

Activations (bytes per token per block) are what autograd saves for backward, counted tensor by tensor for our
module code (``saved_per_layer``); ``tests/test_memory.py`` checks the eager counts against
``torch.autograd.graph.saved_tensors_hooks`` exactly. With activation checkpointing a block saves only its input
and recomputes the rest in its own backward.

The peak is the largest of the phases of a step: the start of backward (all activations + the output head's
logits work), each block's backward (gradients done so far + activations not yet freed + that block's own
working set) and the optimizer step (state + all gradients). ``torch.cuda.max_memory_allocated`` also sees
allocator rounding and fragmentation, which no formula here models.
"""
from __future__ import annotations

from dataclasses import dataclass

from .configs import ModelConfig

FP32, BF16, I64 = 4, 2, 8


@dataclass(frozen=True)
class Setting:
    """What a mode + dtype + compile choice means for the bytes of each kind of tensor."""

    residual: int  # bytes/element of the residual stream (fp32 under autocast, bf16 with bf16 params)
    compute: int  # bytes/element of matmul inputs/outputs
    autocast: bool  # single/ddp with bf16: fp32 params, bf16 matmuls through autocast
    compiled: bool


def setting(mode: str, dtype: str, compiled: bool) -> Setting:
    if dtype == "float32":
        return Setting(FP32, FP32, False, compiled)
    if mode == "fsdp2":
        return Setting(BF16, BF16, False, compiled)
    return Setting(FP32, BF16, True, compiled)


def _norm_saved(d: int, s: Setting, consumers: int, input_bytes: int) -> float:
    """RMSNorm (kernels.rmsnorm_torch) + the input its consumer matmuls save, per token.
    ``input_bytes``: bytes/element of the norm's input as saved (compiled graphs may save a smaller tensor)."""
    if s.compiled:
        # Inductor fuses the norm: it keeps the input and rstd, and the normed output once for the matmuls.
        return input_bytes * d + FP32 + s.compute * d
    xf = FP32 * d  # x.float() (x itself when the residual is fp32)
    y = s.residual * d  # y.type_as(x), saved by the multiply with the weight
    if s.autocast:
        return xf + y + consumers * BF16 * d + FP32  # each consumer Linear casts (and saves) its own bf16 copy
    return xf + y + s.compute * d + FP32  # z = y * w, saved once, shared by the consumer Linears


def saved_per_layer(cfg: ModelConfig, s: Setting, fused_proj: bool = False) -> float:
    """Bytes per token one TransformerBlock saves for backward (no activation checkpointing).

    Eager: every tensor autograd keeps, from our module code. Compiled: what Inductor's min-cut partitioner
    keeps (pointwise work — silu, the norms' scaling, the mid-block residual add — is recomputed in backward;
    matmul outputs are not), read off a compiled model with saved_tensors_hooks."""
    d, kv, f, H, c = cfg.dim, cfg.kv_dim, cfg.ffn_dim, cfg.n_heads, s.compute
    attention = c * d + 2 * c * kv + c * d + FP32 * H  # q, k, v (after RoPE), output o, logsumexp
    if s.compiled:
        mlp = 3 * c * f  # gate, up, and their product (w2's input); silu(gate) is recomputed
        # the mid-block residual h = x + wo(o) is rebuilt from x and wo's (compute-dtype) output
        mid_bytes = min(s.residual, c)
    else:
        mlp = 4 * c * f  # gate (silu's input), silu(gate), up (the multiply's inputs), product (w2's input)
        mid_bytes = s.residual
    # consumers of each norm's output: wq, wk, wv and w1, w3 — or one wqkv and one w13 (fused_proj)
    qkv_consumers, mlp_consumers = (1, 1) if fused_proj else (3, 2)
    return (_norm_saved(d, s, qkv_consumers, s.residual) + attention + _norm_saved(d, s, mlp_consumers, mid_bytes)
            + mlp)


def head_saved(cfg: ModelConfig, s: Setting) -> float:
    """Bytes per token the embedding and output head save: token ids, final norm, log-probabilities."""
    V = cfg.vocab_size
    # compiled: logits + two fp32 row statistics (max, log-sum-exp); eager: the fp32 log_softmax output
    logits = s.compute * V + 2 * FP32 if s.compiled else FP32 * V
    return I64 + _norm_saved(cfg.dim, s, 1, s.residual) + logits + I64  # + token ids, targets


def head_backward_extra(cfg: ModelConfig, s: Setting) -> float:
    """Bytes per token alive beyond the saved ones while the loss and logits are differentiated."""
    V = cfg.vocab_size
    if s.compiled:
        return s.compute * V  # one fused kernel writes d(logits) in the compute dtype
    return 2 * FP32 * V + s.compute * V  # d(log_softmax out), d(logits) in fp32, then its cast


@dataclass(frozen=True)
class MemoryPrediction:
    params: float
    grads: float  # all gradients, as held at the optimizer step
    optimizer: float
    gathered: float  # bf16 compute copies of weights alive at the start of backward
    activations: float  # everything saved for backward at the end of forward (blocks + head)
    peak: float
    peak_phase: str

    def as_gib(self) -> dict[str, float]:
        return {k: getattr(self, k) / 2**30 for k in ("params", "grads", "optimizer", "gathered", "activations",
                                                       "peak")}


def predict(cfg: ModelConfig, B: int, T: int, *, mode: str, world_size: int = 1, dtype: str = "bfloat16",
            compiled: bool = False, ac: bool = False, reshard_after_forward: bool = True,
            fused_proj: bool = False) -> MemoryPrediction:
    """Peak bytes on one rank for one training step with local batch B x T."""
    s = setting(mode, dtype, compiled)
    W = world_size if mode == "fsdp2" else 1
    tokens = B * T
    N = cfg.num_params()
    block_n = cfg.block_params()
    root_n = cfg.embedding_params() + cfg.head_params()
    matmul_n = cfg.n_layers * (cfg.attn_params() + cfg.mlp_params()) + cfg.vocab_size * cfg.dim

    params = FP32 * N / W
    optimizer = 2 * FP32 * N / W
    grads = FP32 * N / W
    state = params + optimizer + (grads if mode == "ddp" else 0.0)  # DDP's gradient buckets persist

    # bf16 weight copies alive when backward starts
    if mode == "fsdp2" and dtype == "bfloat16":
        # root (embedding + head) stays gathered; the last block is not resharded; with resharding off, all are.
        blocks_held = cfg.n_layers if not reshard_after_forward else 1
        gathered = BF16 * (root_n + blocks_held * block_n)
        # in backward FSDP2 gathers block i-1 while block i computes: one more block of bf16 params
        block_gather = BF16 * block_n * (0 if not reshard_after_forward else 1)
        # a block's gradients: bf16 unsharded, cast to fp32 for the reduce-scatter, reduced into fp32 shards
        block_grad_transient = (BF16 + FP32) * block_n
    elif mode == "fsdp2":  # fp32 FSDP2 (tests): gathered fp32 copies
        blocks_held = cfg.n_layers if not reshard_after_forward else 1
        gathered = FP32 * (root_n + blocks_held * block_n) if W > 1 else 0.0
        block_gather = FP32 * block_n if (W > 1 and reshard_after_forward) else 0.0
        block_grad_transient = FP32 * block_n if W > 1 else 0.0
    else:
        # autocast: the bf16 cast of every matmul weight is saved for backward (eager and compiled alike)
        gathered = BF16 * matmul_n if s.autocast else 0.0
        block_gather = 0.0
        block_grad_transient = 0.0

    per_layer = saved_per_layer(cfg, s, fused_proj)
    kept_per_layer = s.residual * cfg.dim if ac else per_layer  # AC keeps the block input only
    head = head_saved(cfg, s)
    activations = tokens * (cfg.n_layers * kept_per_layer + head)

    grad_n = (lambda n: FP32 * n / W) if mode != "ddp" else (lambda n: 0.0)  # ddp: already in `state`
    # the root group's gradients (output head, embedding) are reduced at the end of backward: bf16 until then
    root_grad = (BF16 * root_n) if (mode == "fsdp2" and dtype == "bfloat16") else grad_n(root_n)

    phases = {"start of backward": state + gathered + activations + tokens * head_backward_extra(cfg, s)}
    for i in reversed(range(cfg.n_layers)):
        done = cfg.n_layers - 1 - i  # blocks whose backward has finished
        phases[f"backward of block {i}"] = (
            state + gathered + block_gather + root_grad + done * grad_n(block_n)
            + tokens * (i * kept_per_layer + per_layer + head - head_saved(cfg, s) + I64)
            + block_grad_transient)
    phases["optimizer step"] = state + grads * (mode != "ddp")
    phase = max(phases, key=phases.get)
    return MemoryPrediction(params, grads, optimizer, gathered, activations, phases[phase], phase)
