"""Train the Llama-style model: one entry point for one GPU, N GPUs and N nodes (torchrun).

    # one GPU, no process group
    python -m gpufolio_projects.fsdp_mfu.train --model llama_125m --data stdlib --steps 300
    # 8 GPUs on one node, FSDP2 + compile (launch.py: torchrun with NVLink multicast off in every rank)
    python -m gpufolio_projects.fsdp_mfu.launch --nproc-per-node 8 -- gpufolio_projects.fsdp_mfu.train \
        --mode fsdp2 --compile --model llama_8b --batch 8 --seq 2048 --steps 100
    # 2 nodes x 8 GPUs: run on every node (c10d rendezvous on the first node's address); --shard-size 8: HSDP
    python -m gpufolio_projects.fsdp_mfu.launch --nnodes 2 --nproc-per-node 8 --rdzv-endpoint $HEAD_NODE:29500 \
        --rdzv-id fsdp_mfu_run1 -- gpufolio_projects.fsdp_mfu.train --mode fsdp2 --compile --model llama_8b
    # resume: the same command with --resume (loads the newest complete checkpoint under --ckpt-dir; an error
    # if there is none) or --resume-if-exists (starts from step 0 if there is none: a job that requeues itself)

``--batch`` is the per-rank batch; the global batch is batch x world size. A Slurm script: lab/slurm_train.sbatch.
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


def _parser() -> argparse.ArgumentParser:
    # A one-line usage: a refused argument prints two lines (usage, error), not the whole flag list.
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage="%(prog)s [options] (--help lists them)")
    p.add_argument("--model", default="llama_125m")
    p.add_argument("--data", choices=("stdlib", "synthetic"), default="stdlib")
    p.add_argument("--batch", type=int, default=16, help="sequences per rank per step")
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--ckpt-dir", type=Path, default=None)
    p.add_argument("--ckpt-every", type=int, default=0)
    resume = p.add_mutually_exclusive_group()
    resume.add_argument("--resume", action="store_true", help="continue from the newest complete checkpoint")
    resume.add_argument("--resume-if-exists", action="store_true",
                        help="as --resume, but start from step 0 when there is no checkpoint yet")
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
    return p


def parse_args(argv=None) -> argparse.Namespace:
    """Parse and check everything that can be checked before a process group or a model exists; a bad
    combination exits 2 with one line (argparse's ``error``). Adds ``train_config``, ``model_config`` and
    ``resume_from`` (``(step, folder)`` of the checkpoint to load, or None)."""
    p = _parser()
    args = p.parse_args(argv)
    try:
        args.model_config = get_config(args.model)
        args.train_config = _train_config(args)
    except (KeyError, ValueError) as e:
        p.error(e.args[0])
    model_cfg = args.model_config
    if args.steps <= 0:
        p.error(f"--steps must be positive, got {args.steps}")
    if args.batch <= 0:
        p.error(f"--batch must be positive, got {args.batch}")
    if not 0 < args.seq <= model_cfg.max_seq_len:
        p.error(f"--seq must be in [1, {model_cfg.max_seq_len}] for {args.model}, got {args.seq}")
    if args.eval_every < 0 or (args.eval_every and args.eval_batches <= 0):
        p.error("--eval-every must be >= 0 (0: no evaluation), with a positive --eval-batches")
    if args.max_seconds is not None and args.max_seconds <= 0:
        p.error(f"--max-seconds must be positive, got {args.max_seconds}")
    if args.data == "stdlib" and model_cfg.vocab_size != 256:
        p.error(f"--data stdlib is byte-level: it needs a vocab-256 model, {args.model} has {model_cfg.vocab_size}")
    if args.ckpt_every < 0:
        p.error(f"--ckpt-every must be >= 0 (0: no checkpoints), got {args.ckpt_every}")
    if args.ckpt_every and args.ckpt_dir is None:
        p.error("--ckpt-every needs --ckpt-dir (where to write the checkpoints)")
    args.resume_from = None
    if args.resume or args.resume_if_exists:
        flag = "--resume" if args.resume else "--resume-if-exists"
        if args.ckpt_dir is None:
            p.error(f"{flag} needs --ckpt-dir (where the checkpoints are)")
        try:
            args.resume_from = checkpoint.latest_complete(args.ckpt_dir)
        except ValueError as e:
            p.error(e.args[0])
        if args.resume_from is None and args.resume:
            p.error(f"--resume: no complete checkpoint (step_<N> with its {checkpoint.MARKER} marker) in "
                    f"{args.ckpt_dir}; --resume-if-exists starts from step 0 when there is none")
        if args.resume_from is not None and args.resume_from[0] > args.steps:
            p.error(f"{flag}: the newest complete checkpoint, {args.resume_from[1]}, is past --steps {args.steps}")
    return args


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


def _resume(trainer: Trainer, args, rank: int) -> int:
    """Load the checkpoint ``parse_args`` chose and say which one; returns the step to start from."""
    if not (args.resume or args.resume_if_exists):
        return 0
    if args.resume_from is None:
        start, say = 0, f"resume: no complete checkpoint in {args.ckpt_dir}: starting from step 0"
    else:
        step, path = args.resume_from
        start = checkpoint.load(trainer, path)
        if start != step:
            raise RuntimeError(f"{path} holds step {start}, not the {step} its name says")
        say = f"resume: step {start} from {path}"
    # Everything newer than the newest complete checkpoint is a save that did not finish.
    skipped = [p.name for step, p in checkpoint.step_dirs(args.ckpt_dir) if step > start]
    if skipped:
        say += f" (skipped incomplete: {', '.join(skipped)})"
    if start == args.steps:
        say += f"; --steps {args.steps} already reached: nothing to train"
    if rank == 0:
        print(say, flush=True)
    return start


def main(argv=None) -> dict:
    t_start = time.perf_counter()  # --max-seconds counts from here: data loading and model build included
    args = parse_args(argv)
    cfg, model_cfg = args.train_config, args.model_config
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    info = distmod.init(device_type) if cfg.mode != "single" else None
    rank, world = (info.rank, info.world_size) if info else (0, 1)
    device = info.device if info else torch.device(device_type)
    spec = BatchSpec(args.batch * world, args.seq, rank, world)
    if args.data == "stdlib":
        train_stream, val_stream = load_stdlib_bytes()
        train, val = TextBatches(train_stream, spec, cfg.seed), TextBatches(val_stream, spec, cfg.seed)
    else:
        train = val = SyntheticBatches(model_cfg.vocab_size, spec, cfg.seed)

    trainer = Trainer(model_cfg, cfg, device)
    start = _resume(trainer, args, rank)

    fpt = flops_per_token(model_cfg, args.seq, cfg.ac).model
    try:  # the log's MFU needs the GPU's datasheet peak: an unlisted GPU trains with no MFU, and says so
        peak = peak_flops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    except KeyError as e:
        peak = None
        if rank == 0:
            print(f"train: no MFU in the log: {e.args[0]}", flush=True)
    log = {"model": args.model, "params": model_cfg.num_params(), "train_config": cfg.__dict__, "start_step": start,
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
    # tok/s is over the steps of a window: from the last logged step, or from an evaluation or a save (whose time
    # is no training step's), to this one. A first window of under 10 steps is mostly warm-up: no number.
    t_begin = t_window = time.perf_counter()
    window_first = start
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
            loss_value = float(lv)  # waits for the window's last step, so its device time is inside the window
            now = time.perf_counter()
            n_window = step + 1 - window_first
            warm_up = window_first == start and n_window < 10
            tok_s = float("nan") if warm_up else tokens_per_step * n_window / (now - t_window)
            t_window, window_first = now, step + 1
            entry = {"step": step + 1, "loss": loss_value, "tok_s": tok_s,
                     "lr": trainer.optimizer.param_groups[0]["lr"]}
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
            t_window, window_first = time.perf_counter(), step + 1
        if args.ckpt_dir is not None and args.ckpt_every and (step + 1) % args.ckpt_every == 0:
            checkpoint.save(trainer, args.ckpt_dir / f"step_{step + 1}")
            t_window, window_first = time.perf_counter(), step + 1
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
