"""Wrap a Transformer for its mode, in torchtitan's order: activation checkpointing, then compile, then
FSDP2 (or DDP).

Why this order:
- AC first: it marks each block's forward as a recompute region, and compile must see that region to put it
  in the graph (the partitioner then saves only the block input and replays the rest in backward).
- compile per block, before sharding: each TransformerBlock (and the output head) is compiled on its own, so
  FSDP2's all-gather / reduce-scatter hooks, which sit on the wrapper module, stay outside the compiled graphs
  and run eagerly between them. All blocks share one compiled graph (same code, same shapes).
- FSDP2 last: ``fully_shard`` per block, then the root. Each block is one communication unit (one all-gather
  in forward, one all-gather + reduce-scatter in backward); the root group holds what is left (embedding,
  output head).
"""
from __future__ import annotations

import torch
from torch import nn

from .model import Transformer

try:  # public since torch 2.6; the private path is what 2.4/2.5 had
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
except ImportError:  # pragma: no cover - older torch
    from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard


def apply_ac(model: Transformer) -> None:
    """Full activation checkpointing: every block keeps only its input; HFU pays one more forward."""
    for block in model.layers.values():
        block.checkpointed = True


def apply_compile(model: Transformer) -> None:
    for name, block in list(model.layers.items()):
        model.layers[name] = torch.compile(block, fullgraph=True)
    model.head = torch.compile(model.head, fullgraph=True)


def apply_fsdp(model: Transformer, mesh, param_dtype: torch.dtype, reduce_dtype: torch.dtype,
               reshard_after_forward: bool) -> None:
    """Shard every parameter over ``mesh``. Kept per rank between steps: fp32 parameter shards (the master
    weights), fp32 gradient shards and AdamW's two fp32 states. During a block's forward/backward its bf16
    (param_dtype) full parameters exist; gradients are reduce-scattered in reduce_dtype (fp32)."""
    mp = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=reduce_dtype)
    blocks = list(model.layers.values())
    for i, block in enumerate(blocks):
        # The last block is needed again first thing in backward: resharding it after forward would only
        # make FSDP all-gather it straight back.
        fully_shard(block, mesh=mesh, mp_policy=mp,
                    reshard_after_forward=reshard_after_forward and i < len(blocks) - 1)
    # Root: embedding + output head; backward starts in the head, so it stays gathered after forward.
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=False)


def apply_ddp(model: nn.Module, device: torch.device) -> nn.Module:
    from torch.nn.parallel import DistributedDataParallel as DDP

    # gradient_as_bucket_view: grads live inside DDP's all-reduce buckets instead of in a second copy.
    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None,
               gradient_as_bucket_view=True)


def parallelize(model: Transformer, mode: str, device: torch.device, *, compile: bool, ac: bool,
                param_dtype: torch.dtype, reshard_after_forward: bool, mesh=None) -> nn.Module:
    if ac:
        apply_ac(model)
    if compile:
        apply_compile(model)
    if mode == "fsdp2":
        apply_fsdp(model, mesh, param_dtype, torch.float32, reshard_after_forward)
        return model
    if mode == "ddp":
        return apply_ddp(model, device)
    if mode == "single":
        return model
    raise ValueError(f"unknown mode {mode!r}; known: single, ddp, fsdp2")


def unwrap(model: nn.Module) -> Transformer:
    """The Transformer under a DDP wrapper (FSDP2 and compile-per-block keep the root a Transformer)."""
    inner: nn.Module | None = getattr(model, "module", None)
    return inner if isinstance(inner, Transformer) else model  # type: ignore[return-value]
