"""What a rank started by launch.py sees: its place in the group and the environment, written as JSON.
A module of the package so that torchrun's ranks can run it by name (tests/test_launch.py)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

NAMES = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "TRITON_INTERPRET")

if __name__ == "__main__":
    dist.init_process_group("gloo")
    total = torch.tensor([float(dist.get_rank())])
    dist.all_reduce(total)  # every rank of every agent is in one group
    out = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum_of_ranks": float(total),
           "env": {n: os.environ.get(n) for n in NAMES}}
    Path(sys.argv[1], f"rank{dist.get_rank()}.json").write_text(json.dumps(out))
    dist.barrier()
    dist.destroy_process_group()
