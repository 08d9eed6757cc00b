"""Process group and device mesh, the same code under torchrun (N ranks, N nodes) and inside one process.

Under torchrun, RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT come from the launcher (env://).
Without them (a bench case, a notebook) we make a 1-rank group on an in-process HashStore: no port, no file.
``init`` is idempotent: a process keeps one group for its lifetime (the bench worker runs many cases in one
process; tearing NCCL down and up between cases costs seconds and buys nothing).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device


def init(device_type: str) -> DistInfo:
    """Join (or create) the default process group and return this rank's place and device."""
    if not dist.is_initialized():
        # One group serves both devices: NCCL for CUDA tensors, gloo for CPU ones (DCP's metadata exchange).
        backend = "cpu:gloo,cuda:nccl" if device_type == "cuda" else "gloo"
        if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
            if device_type == "cuda":
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
            dist.init_process_group(backend=backend)
        else:
            dist.init_process_group(backend=backend, store=dist.HashStore(), rank=0, world_size=1)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank if "RANK" in os.environ else 0))
    if device_type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    return DistInfo(rank, world, local_rank, device)


def mesh(device_type: str, shard_size: int = 0):
    """The mesh FSDP2 shards over. ``shard_size`` 0 (or the world size): a 1-D mesh over all ranks, every
    parameter sharded over all of them (ZeRO-3). Fewer: HSDP, a 2-D (replicate, shard) mesh — parameters sharded
    within each group of ``shard_size`` consecutive ranks (one node's NVLink domain) and replicated across the
    groups, whose gradients are then all-reduced (the slow inter-node link carries one all-reduce per step
    instead of every all-gather and reduce-scatter)."""
    from torch.distributed.device_mesh import init_device_mesh

    world = dist.get_world_size()
    if shard_size in (0, world):
        return init_device_mesh(device_type, (world,))
    if shard_size < 0 or world % shard_size:
        raise ValueError(f"HSDP shard size {shard_size} does not divide the world size {world}")
    return init_device_mesh(device_type, (world // shard_size, shard_size), mesh_dim_names=("replicate", "shard"))


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
