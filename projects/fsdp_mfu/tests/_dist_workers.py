"""Rank bodies of the 2- and 4-rank gloo tests. A module of the package (not the test file) so that spawned
processes can import the functions by name."""
from __future__ import annotations

import gc
import os
import socket
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from gpufolio_projects.fsdp_mfu.configs import get_config
from gpufolio_projects.fsdp_mfu.data import BatchSpec, SyntheticBatches
from gpufolio_projects.fsdp_mfu.trainer import TrainConfig, Trainer

WORLD = 2  # unless a test asks for more
GLOBAL_BATCH, SEQ = 4, 32  # 4 sequences: one per rank at 4 ranks
TOL = dict(rtol=1e-4, atol=1e-6)  # fp32, reordered sums (all-reduce / reduce-scatter) only


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(fn, *args, world: int = WORLD) -> None:
    port = _free_port()
    # The ranks run PyTorch ops only. Other projects' conftests set TRITON_INTERPRET=1 for their kernels; the
    # ranks would inherit it, and with it the checkpoint test aborted at random in teardown (std::terminate).
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        mp.spawn(_entry, args=(fn, port, world, *args), nprocs=world, join=True)
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved


def _entry(rank: int, fn, port: int, world: int, *args) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        fn(rank, *args)
        # both ranks past their last collective before either tears gloo down: a rank that destroys its group
        # while the other still talks to it can abort the other ("terminate called without an active exception")
        dist.barrier()
        # free the ranks' modules and pending work handles while the interpreter is whole, not in its teardown
        gc.collect()
    finally:
        dist.destroy_process_group()
    # A rank that passed leaves without interpreter finalization: gloo threads that outlive the group can still
    # abort the process there (std::terminate, SIGABRT) after every check passed, and spawn reports a failure.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _full_grads(trainer: Trainer) -> dict[str, torch.Tensor]:
    out = {}
    for name, p in trainer.transformer.named_parameters():
        g = p.grad
        out[name] = (g.full_tensor() if hasattr(g, "full_tensor") else g).detach().clone()
    return out


def _mean_over_ranks(x: torch.Tensor) -> float:
    x = x.clone()
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    return float(x)


def _finish_step(trainer: Trainer) -> None:
    """The rest of Trainer.step after forward_backward (clip, AdamW, zero_grad, schedule)."""
    trainer.clip_grad_norm()
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)
    trainer.set_step(trainer.step_count + 1)


def equivalence(rank: int) -> None:
    """DDP, FSDP2 and (at 4 ranks) HSDP as 2 groups of 2 against one process on the whole global batch."""
    world = dist.get_world_size()
    cfg = get_config("tiny")
    tcfg = dict(dtype="float32", lr=1e-3, seed=3)
    full = SyntheticBatches(cfg.vocab_size, BatchSpec(GLOBAL_BATCH, SEQ), seed=7)
    mine = SyntheticBatches(cfg.vocab_size, BatchSpec(GLOBAL_BATCH, SEQ, rank, world), seed=7)
    device = torch.device("cpu")

    single = Trainer(cfg, TrainConfig(mode="single", **tcfg), device)
    x, y = full.batch(0)
    ref_loss = float(single.forward_backward(x, y))
    ref_grads = _full_grads(single)
    _finish_step(single)
    ref_later = [float(single.step(*full.batch(s))) for s in (1, 2, 3)]

    layouts = [("ddp", 0), ("fsdp2", 0)] + ([("fsdp2", 2)] if world == 4 else [])  # (mode, shard_size)
    for mode, shard in layouts:
        tr = Trainer(cfg, TrainConfig(mode=mode, shard_size=shard, **tcfg), device)
        if shard:
            mode = f"hsdp {world // shard}x{shard}"
        xl, yl = mine.batch(0)
        loss = _mean_over_ranks(tr.forward_backward(xl, yl))
        assert loss == pytest.approx(ref_loss, rel=1e-5), (mode, loss, ref_loss)
        grads = _full_grads(tr)
        assert grads.keys() == ref_grads.keys()
        for name, g in grads.items():
            torch.testing.assert_close(g, ref_grads[name], **TOL, msg=f"{mode} grad {name}")
        _finish_step(tr)
        later = [_mean_over_ranks(tr.step(*mine.batch(s))) for s in (1, 2, 3)]
        assert later == pytest.approx(ref_later, rel=1e-5), (mode, later, ref_later)


def resume(rank: int, ckpt_dir: str) -> None:
    cfg = get_config("tiny")
    data = SyntheticBatches(cfg.vocab_size, BatchSpec(GLOBAL_BATCH, SEQ, rank, WORLD), seed=11)
    device = torch.device("cpu")
    from gpufolio_projects.fsdp_mfu import checkpoint

    def run(trainer, steps):
        return [_mean_over_ranks(trainer.step(*data.batch(s))) for s in steps]

    tcfg = TrainConfig(mode="fsdp2", dtype="float32", lr=1e-3, warmup_steps=2, decay_steps=4, seed=5)
    a = Trainer(cfg, tcfg, device)
    run(a, range(0, 3))
    checkpoint.save(a, ckpt_dir)
    assert checkpoint.is_complete(ckpt_dir)  # on every rank: save returns only once rank 0 wrote the marker
    expected = run(a, range(3, 6))

    b = Trainer(cfg, TrainConfig(**{**tcfg.__dict__, "seed": 99}), device)  # different init: load must override
    assert checkpoint.load(b, ckpt_dir) == 3
    assert b.optimizer.param_groups[0]["lr"] == pytest.approx(a.cfg.lr * a.cfg.lr_factor(3))
    assert run(b, range(3, 6)) == pytest.approx(expected, rel=1e-6)

    # the same checkpoint, resharded onto the DDP layout (full replicas): the next loss agrees
    c = Trainer(cfg, TrainConfig(**{**tcfg.__dict__, "mode": "ddp", "seed": 99}), device)
    assert checkpoint.load(c, ckpt_dir) == 3
    assert run(c, range(3, 4)) == pytest.approx(expected[:1], rel=1e-5)


