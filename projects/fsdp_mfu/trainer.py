"""One training step, the same for every mode: build (model -> parallelize -> optimizer), then ``step``.

Precision, by mode (what each rank keeps — memory.py counts exactly this):
  single / ddp, dtype=bfloat16: fp32 parameters and gradients, fp32 AdamW states; the matmuls run in bf16
      under ``torch.autocast`` (which keeps a bf16 copy of each weight from forward to backward).
  fsdp2, dtype=bfloat16: fp32 parameter shards (the master weights), fp32 gradient shards, fp32 AdamW states;
      FSDP2's MixedPrecisionPolicy all-gathers bf16 parameters for compute and reduce-scatters fp32 gradients.
  dtype=float32 (tests): everything fp32, no autocast.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
from torch import nn

from . import distributed as distmod
from .configs import ModelConfig
from .kernels import build_kernels
from .model import Transformer
from .parallelize import parallelize, unwrap

MODES = ("single", "ddp", "fsdp2")
SDPA_BACKENDS = ("auto", "flash", "cudnn", "efficient", "math")


@dataclass(frozen=True)
class TrainConfig:
    mode: str = "single"
    dtype: str = "bfloat16"  # compute dtype: autocast (single/ddp) or FSDP2 param_dtype; float32 for tests
    compile: bool = False
    ac: bool = False  # full activation checkpointing per block
    reshard_after_forward: bool = True  # fsdp2: free each block's gathered params after its forward (ZeRO-3)
    shard_size: int = 0  # fsdp2: ranks a parameter is sharded over; 0 = all (FSDP), fewer = HSDP (distributed.mesh)
    fused_kernels: bool = False  # RMSNorm / SwiGLU from gpufolio_projects.fused_kernels
    triton_attention: bool = False  # attention from gpufolio_projects.flash_attention
    sdpa_backend: str = "auto"
    lr: float = 3e-4
    min_lr_ratio: float = 0.1
    warmup_steps: int = 0
    decay_steps: int = 0  # cosine decay to min_lr_ratio * lr over this many steps after warmup; 0 = constant
    beta1: float = 0.9
    beta2: float = 0.95
    weight_decay: float = 0.1
    grad_clip: float | None = 1.0
    seed: int = 0
    fused_adamw: bool | None = None  # None: fused on CUDA, foreach elsewhere
    # Gradient clipping folded into fused AdamW: the clip factor goes in as the optimizer's grad_scale (the
    # divisor its one kernel pass applies to every gradient), instead of a separate foreach multiply that
    # reads and writes every fp32 gradient once more. Needs fused AdamW.
    fold_clip: bool = False
    fused_proj: bool = False  # wqkv / w13: fewer, larger GEMMs (model.py); same parameters and FLOPs
    meta_init: bool = False  # build on the meta device, shard, then materialise (models bigger than a GPU)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} not in {MODES}")
        if self.dtype not in ("bfloat16", "float32"):
            raise ValueError(f"dtype {self.dtype!r}: bfloat16 or float32")
        if self.sdpa_backend not in SDPA_BACKENDS:
            raise ValueError(f"sdpa_backend {self.sdpa_backend!r} not in {SDPA_BACKENDS}")
        if self.shard_size < 0 or (self.shard_size and self.mode != "fsdp2"):
            raise ValueError(f"shard_size {self.shard_size}: a non-negative rank count, and only for mode='fsdp2'")
        if self.meta_init and self.mode != "fsdp2":
            raise ValueError("meta_init materialises shards: it needs mode='fsdp2'")
        if self.lr <= 0 or self.warmup_steps < 0 or self.decay_steps < 0:
            raise ValueError("lr must be positive, warmup/decay steps non-negative")
        if self.fold_clip and self.fused_adamw is False:
            raise ValueError("fold_clip hands the clip factor to fused AdamW: it needs fused_adamw")

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    def lr_factor(self, step: int) -> float:
        """Multiplier of ``lr`` at ``step`` (0-based): linear warmup, then cosine (or constant)."""
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if not self.decay_steps:
            return 1.0
        t = min(step - self.warmup_steps, self.decay_steps) / self.decay_steps
        return self.min_lr_ratio + (1 - self.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))


def _sdpa_context(backend: str):
    if backend == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend])


class Trainer:
    """``step(tokens, targets) -> loss`` (this rank's mean loss, detached; no host sync)."""

    def __init__(self, model_cfg: ModelConfig, cfg: TrainConfig, device: torch.device):
        self.model_cfg, self.cfg, self.device = model_cfg, cfg, device
        self.dist = distmod.init(device.type) if cfg.mode != "single" else None
        kernels = build_kernels(cfg.fused_kernels, cfg.triton_attention)
        if cfg.meta_init:
            with torch.device("meta"):
                model = Transformer(model_cfg, kernels, cfg.fused_proj)
        else:
            with torch.device(device):
                model = Transformer(model_cfg, kernels, cfg.fused_proj)
            # Same seed, same device -> the same initial weights in every mode (the equivalence tests rely on it).
            model.init_weights(cfg.seed)
        mesh = distmod.mesh(device.type, cfg.shard_size) if cfg.mode == "fsdp2" else None
        self.model: nn.Module = parallelize(model, cfg.mode, device, compile=cfg.compile, ac=cfg.ac,
                                            param_dtype=cfg.torch_dtype, mesh=mesh,
                                            reshard_after_forward=cfg.reshard_after_forward)
        if cfg.meta_init:
            model.to_empty(device=device)
            model.init_weights(cfg.seed)
        self.optimizer = self._build_optimizer()
        self.step_count = 0

    def _build_optimizer(self) -> torch.optim.Optimizer:
        decay = [p for p in self.model.parameters() if p.ndim >= 2]  # matrices and embeddings
        no_decay = [p for p in self.model.parameters() if p.ndim < 2]  # norm gains
        fused = self.device.type == "cuda" if self.cfg.fused_adamw is None else self.cfg.fused_adamw
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.cfg.lr * self.cfg.lr_factor(0), betas=(self.cfg.beta1, self.cfg.beta2),
            fused=fused, foreach=None if fused else True)

    @property
    def transformer(self) -> Transformer:
        return unwrap(self.model)

    def _autocast(self):
        on = self.cfg.mode != "fsdp2" and self.cfg.dtype == "bfloat16"
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=on)

    def set_step(self, step: int) -> None:
        """Position the LR schedule at ``step`` (after a resume)."""
        self.step_count = step
        for group in self.optimizer.param_groups:
            group["lr"] = self.cfg.lr * self.cfg.lr_factor(step)

    @property
    def fused_optimizer(self) -> bool:
        return bool(self.optimizer.defaults.get("fused"))

    def clip_grad_norm(self) -> torch.Tensor:
        params = [p for p in self.model.parameters() if p.grad is not None]
        total = torch.nn.utils.get_total_norm([p.grad for p in params], foreach=True)
        if hasattr(total, "full_tensor"):  # FSDP2: a norm of shards is a partial result; reduce it over ranks
            total = total.full_tensor()
        if self.cfg.fold_clip and self.fused_optimizer:
            # clip_grads_with_norm_ multiplies by min(1, max_norm / (norm + 1e-6)); fused AdamW divides by
            # grad_scale, so the same factor is its inverse. A device tensor: no host sync.
            self.optimizer.grad_scale = torch.clamp((total.float() + 1e-6) / self.cfg.grad_clip, min=1.0)
        else:
            torch.nn.utils.clip_grads_with_norm_(params, self.cfg.grad_clip, total, foreach=True)
        return total

    def forward_backward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        with self._autocast(), _sdpa_context(self.cfg.sdpa_backend):
            loss = self.model(tokens, targets)
        loss.backward()
        return loss.detach()

    def step(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        loss = self.forward_backward(tokens, targets)
        if self.cfg.grad_clip is not None:
            self.clip_grad_norm()
        self.optimizer.step()
        self.optimizer.grad_scale = None  # a folded clip factor is for this step only
        self.optimizer.zero_grad(set_to_none=True)
        self.set_step(self.step_count + 1)
        return loss
