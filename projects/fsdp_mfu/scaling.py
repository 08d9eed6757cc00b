"""Scaling curve: tokens/s and MFU of one configuration as the number of GPUs grows (weak scaling: a fixed
per-rank batch, so the global batch grows with the world size). Ready for a multi-GPU machine; not run yet
(only one GPU is lent to this project).

    # one node, 1..8 GPUs (each run is its own torchrun; results are appended as JSON lines)
    for n in 1 2 4 8; do
      torchrun --standalone --nproc-per-node $n -m gpufolio_projects.fsdp_mfu.scaling \
          --model llama_1b --batch 8 --seq 2048 --mode fsdp2 --compile --out scaling.jsonl
    done
    # across nodes: the same command under the c10d rendezvous of train.py's docstring / README's Slurm script

Each run: build, ``--warmup`` steps (compile happens here), then ``--steps`` timed steps, each timed on the host
with a device synchronize and a barrier on both sides (so the slowest rank sets the time). Rank 0 appends one
JSON line: world size, the median step time, global tokens/s, MFU per GPU against the datasheet peak, the
predicted and measured peak memory of rank 0, and the environment stamp.

What to expect (write the prediction before the run): FSDP2 moves 2 bytes/param (bf16 all-gather) in forward,
2 more in backward (re-gather) and 4 bytes/param (fp32 reduce-scatter) per step, ~8 bytes x N per rank per step
whatever the world size; at 1B params that is ~8 GB per step against ~450 GB/s of NVLink per direction on H100/H200
(~18 ms) inside a ~180 ms step, hidden behind compute when prefetching works — near-flat MFU within a node;
across nodes (~50 GB/s per GPU of InfiniBand) the same bytes take ~160 ms and stop hiding.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist

from . import distributed as distmod
from .configs import get_config
from .data import BatchSpec, SyntheticBatches
from .flops import flops_per_token, peak_flops
from .memory import predict
from .trainer import TrainConfig, Trainer


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="llama_1b")
    p.add_argument("--batch", type=int, default=8, help="sequences per rank")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--mode", default="fsdp2", choices=("ddp", "fsdp2"))
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--ac", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--reshard-after-forward", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)

    info = distmod.init("cuda")
    cfg = get_config(a.model)
    tcfg = TrainConfig(mode=a.mode, compile=a.compile, ac=a.ac, reshard_after_forward=a.reshard_after_forward)
    trainer = Trainer(cfg, tcfg, info.device)
    data = SyntheticBatches(cfg.vocab_size, BatchSpec(a.batch * info.world_size, a.seq, info.rank,
                                                      info.world_size), seed=0)
    times = []
    for step in range(a.warmup + a.steps):
        x, y = data.batch(step, info.device)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        trainer.step(x, y)
        torch.cuda.synchronize()
        dist.barrier()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    if info.rank == 0:
        median = statistics.median(times)
        tok_s = a.batch * a.seq * info.world_size / median
        fpt = flops_per_token(cfg, a.seq, a.ac)
        peak = peak_flops(torch.cuda.get_device_name(info.device))
        row = {"world_size": info.world_size, "model": a.model, "batch_per_rank": a.batch, "seq": a.seq,
               "mode": a.mode, "compile": a.compile, "ac": a.ac, "reshard_after_forward": a.reshard_after_forward,
               "median_step_s": median, "step_times_s": times, "tok_s": tok_s,
               "mfu": fpt.model * tok_s / (info.world_size * peak),
               "mem_pred_gib": predict(cfg, a.batch, a.seq, mode=a.mode, world_size=info.world_size,
                                       compiled=a.compile, ac=a.ac,
                                       reshard_after_forward=a.reshard_after_forward).peak / 2**30,
               "mem_peak_gib": torch.cuda.max_memory_allocated(info.device) / 2**30}
        try:
            from .loss_curve import stamp

            row.update(stamp())
        except Exception as e:  # noqa: BLE001 - keep the measurement; record why the stamp is missing
            row["stamp_error"] = repr(e)
        with a.out.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        print(f"world {info.world_size}: {tok_s:,.0f} tok/s, MFU {100 * row['mfu']:.1f}%")
    distmod.shutdown()


if __name__ == "__main__":
    main()
