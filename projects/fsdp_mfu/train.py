"""Train the Llama-style model: one entry point for one GPU, N GPUs and N nodes (torchrun).

    # one GPU, no process group
    python -m gpufolio_projects.fsdp_mfu.train --model llama_125m --data stdlib --steps 300
    # 8 GPUs on one node, FSDP2 + compile
    torchrun --standalone --nproc-per-node 8 -m gpufolio_projects.fsdp_mfu.train \
        --mode fsdp2 --compile --model llama_8b --batch 8 --seq 2048 --steps 100
    # 2 nodes x 8 GPUs: run on every node (c10d rendezvous on the first node's address)
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint $HEAD_NODE:29500 \
        --rdzv-id fsdp_mfu_run1 -m gpufolio_projects.fsdp_mfu.train --mode fsdp2 --compile --model llama_8b
    # resume: the same command with --resume (loads the newest checkpoint under --ckpt-dir)

``--batch`` is the per-rank batch; the global batch is batch x world size. A Slurm script is in README.md.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import fields
from pathlib import Path

import torch
import torch.distributed as dist

from . import checkpoint
from . import distributed as distmod
from .configs import get_config
from .data import BatchSpec, SyntheticBatches, TextBatches, load_stdlib_bytes
from .flops import flops_per_token, peak_flops
from .trainer import TrainConfig, Trainer


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="llama_125m")
    p.add_argument("--data", choices=("stdlib", "synthetic"), default="stdlib")
    p.add_argument("--batch", type=int, default=16, help="sequences per rank per step")
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--ckpt-dir", type=Path, default=None)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--log-json", type=Path, default=None, help="write the loss curve here (rank 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar: one printed line per 10 steps")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop after this many seconds of training (then evaluate and write the log)")
    # Every TrainConfig field is a flag; defaults come from TrainConfig only (one place).
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        elif f.name in ("grad_clip",):
            p.add_argument(flag, type=float, default=f.default)
        elif f.name == "fused_adamw":
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            p.add_argument(flag, type=type(f.default), default=f.default)
    return p.parse_args(argv)


def _train_config(args) -> TrainConfig:
    return TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)})


def evaluate(trainer: Trainer, batches, n: int, device) -> float:
    """Mean validation loss over ``n`` fixed batches, averaged over ranks."""
    model = trainer.model
    model.eval()
    total = torch.zeros((), device=device)
    with torch.no_grad(), trainer._autocast():
        for i in range(n):
            x, y = batches.batch(10_000_000 + i, device)  # steps far from training's: fixed val windows
            total += model(x, y).float()
    model.train()
    if dist.is_initialized():
        dist.all_reduce(total, op=dist.ReduceOp.AVG)
    return float(total) / n


def main(argv=None) -> dict:
    t_start = time.perf_counter()  # --max-seconds counts from here: data loading and model build included
    args = parse_args(argv)
    cfg = _train_config(args)
    model_cfg = get_config(args.model)
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    info = distmod.init(device_type) if cfg.mode != "single" else None
    rank, world = (info.rank, info.world_size) if info else (0, 1)
    device = info.device if info else torch.device(device_type)
    spec = BatchSpec(args.batch * world, args.seq, rank, world)
    if args.data == "stdlib":
        if model_cfg.vocab_size != 256:
            raise SystemExit(f"--data stdlib is byte-level: it needs a vocab-256 model, {args.model} has "
                             f"{model_cfg.vocab_size}")
        train_stream, val_stream = load_stdlib_bytes()
        train, val = TextBatches(train_stream, spec, cfg.seed), TextBatches(val_stream, spec, cfg.seed)
    else:
        train = val = SyntheticBatches(model_cfg.vocab_size, spec, cfg.seed)

    trainer = Trainer(model_cfg, cfg, device)
    start = 0
    if args.resume and args.ckpt_dir is not None and any(args.ckpt_dir.glob("step_*")):
        latest = max(args.ckpt_dir.glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
        start = checkpoint.load(trainer, latest)

    fpt = flops_per_token(model_cfg, args.seq, cfg.ac).model
    peak = peak_flops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    log = {"model": args.model, "params": model_cfg.num_params(), "train_config": cfg.__dict__,
           "batch_per_rank": args.batch, "seq": args.seq, "world_size": world,
           "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu", "steps": [], "val": []}
    bar = None
    if rank == 0 and not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=args.steps, initial=start, unit="step", dynamic_ncols=True)
    tokens_per_step = spec.global_batch * args.seq

    def write_log() -> None:  # after every evaluation too: a run killed from outside keeps its curve so far
        if rank == 0 and args.log_json is not None:
            args.log_json.parent.mkdir(parents=True, exist_ok=True)
            args.log_json.write_text(json.dumps(log, indent=1, default=str) + "\n")

    if args.eval_every and start == 0:  # the curve starts from the untrained model
        log["val"].append({"step": 0, "loss": evaluate(trainer, val, args.eval_batches, device)})
        write_log()
    t_begin = t_last = time.perf_counter()
    loss = None
    for step in range(start, args.steps):
        x, y = train.batch(step, device)
        loss = trainer.step(x, y)
        if bar is not None:
            bar.update(1)
        if (step + 1) % 10 == 0 or step + 1 == args.steps:
            lv = loss.clone()
            if dist.is_initialized():
                dist.all_reduce(lv, op=dist.ReduceOp.AVG)  # a host sync every 10 steps, not every step
            now = time.perf_counter()
            tok_s = tokens_per_step * 10 / (now - t_last) if step + 1 - start >= 10 else float("nan")
            t_last = now
            entry = {"step": step + 1, "loss": float(lv), "tok_s": tok_s, "lr": trainer.optimizer.param_groups[0]["lr"]}
            if peak:
                entry["mfu"] = fpt * tok_s / (world * peak)
            log["steps"].append(entry)
            if bar is not None:
                bar.set_postfix(loss=f"{entry['loss']:.3f}", tok_s=f"{tok_s:,.0f}",
                                mfu=f"{100 * entry.get('mfu', float('nan')):.1f}%")
            elif rank == 0:
                print(f"step {step + 1}: loss {entry['loss']:.3f}, {tok_s:,.0f} tok/s, "
                      f"{now - t_begin:.1f} s", flush=True)
        out_of_time = args.max_seconds is not None and time.perf_counter() - t_start > args.max_seconds
        last = step + 1 == args.steps or out_of_time
        if args.eval_every and ((step + 1) % args.eval_every == 0 or last):
            log["val"].append({"step": step + 1, "loss": evaluate(trainer, val, args.eval_batches, device)})
            if rank == 0 and bar is None:
                print(f"step {step + 1}: val loss {log['val'][-1]['loss']:.3f}", flush=True)
            write_log()
        if args.ckpt_dir is not None and args.ckpt_every and (step + 1) % args.ckpt_every == 0:
            checkpoint.save(trainer, args.ckpt_dir / f"step_{step + 1}")
        if out_of_time:
            log["stopped_early"] = {"step": step + 1, "max_seconds": args.max_seconds}
            break
    if bar is not None:
        bar.close()
    write_log()
    return log


if __name__ == "__main__":
    main()
    distmod.shutdown()
