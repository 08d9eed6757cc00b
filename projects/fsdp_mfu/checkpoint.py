"""Save and resume through torch.distributed.checkpoint (DCP): every rank writes its own shards in parallel,
and a checkpoint saved on N ranks loads on M ranks (DCP reshards by parameter name on load).

What is saved: model and optimizer state as ``get_state_dict`` presents them (full names, no wrapper
prefixes: the same keys in single, ddp and fsdp2 mode) and the step. The data order and the LR schedule are
pure functions of the step (data.py, TrainConfig.lr_factor), so the step restores both.

A checkpoint is ``<ckpt_dir>/step_<N>``, and it is complete once its ``COMPLETE`` marker exists: rank 0
writes the marker (holding the step) after ``dcp.save`` has returned, and removes it before saving over an
old one. A save killed half-way therefore leaves a folder without the marker, which resume skips. DCP's own
``.metadata`` is not enough: saving over an existing checkpoint rewrites the shards while the old
``.metadata`` is still there, and a kill then leaves a folder that looks complete.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from .trainer import Trainer

MARKER = "COMPLETE"
_STEP_DIR = re.compile(r"step_(\d+)")


def _state(trainer: Trainer) -> dict:
    model_sd, optim_sd = get_state_dict(trainer.model, trainer.optimizer)
    return {"model": model_sd, "optim": optim_sd, "step": torch.tensor(trainer.step_count)}


def _rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def save(trainer: Trainer, path: str | Path) -> None:
    """Write the checkpoint, then its marker; on return it is complete on every rank."""
    path = Path(path)
    if _rank() == 0:
        (path / MARKER).unlink(missing_ok=True)  # before any rank writes: DCP's planning is a collective
    dcp.save(_state(trainer), checkpoint_id=str(path))
    if _rank() == 0:  # the coordinator: its dcp.save returns after .metadata is written
        (path / MARKER).write_text(json.dumps({"step": trainer.step_count}) + "\n")
    if dist.is_initialized():
        dist.barrier()  # no rank goes on (or is killed) believing in a checkpoint without its marker


def load(trainer: Trainer, path: str | Path) -> int:
    """Load into ``trainer`` in place; returns the step the checkpoint was taken at."""
    state = _state(trainer)
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(trainer.model, trainer.optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    step = int(state["step"])
    trainer.set_step(step)
    return step


def is_complete(path: str | Path) -> bool:
    return (Path(path) / MARKER).is_file()


def step_dirs(ckpt_dir: str | Path) -> list[tuple[int, Path]]:
    """``(step, folder)`` of every ``step_<N>`` folder under ``ckpt_dir``, oldest first, complete or not.
    Raises ValueError for a ``step_*`` name that is not ``step_<N>`` (resume will not guess what it holds)."""
    found = []
    for p in Path(ckpt_dir).glob("step_*"):
        m = _STEP_DIR.fullmatch(p.name)
        if m is None:
            raise ValueError(f"{p} is not a checkpoint folder (step_<N>): rename or remove it")
        found.append((int(m.group(1)), p))
    return sorted(found)


def latest_complete(ckpt_dir: str | Path) -> tuple[int, Path] | None:
    """The newest complete checkpoint under ``ckpt_dir`` as ``(step, folder)``, or None."""
    complete = [(step, p) for step, p in step_dirs(ckpt_dir) if is_complete(p)]
    return complete[-1] if complete else None
