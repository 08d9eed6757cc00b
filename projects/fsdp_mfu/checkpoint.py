"""Save and resume through torch.distributed.checkpoint (DCP): every rank writes its own shards in parallel,
and a checkpoint saved on N ranks loads on M ranks (DCP reshards by parameter name on load).

What is saved: model and optimizer state as ``get_state_dict`` presents them (full names, no wrapper
prefixes: the same keys in single, ddp and fsdp2 mode) and the step. The data order and the LR schedule are
pure functions of the step (data.py, TrainConfig.lr_factor), so the step restores both.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from .trainer import Trainer


def _state(trainer: Trainer) -> dict:
    model_sd, optim_sd = get_state_dict(trainer.model, trainer.optimizer)
    return {"model": model_sd, "optim": optim_sd, "step": torch.tensor(trainer.step_count)}


def save(trainer: Trainer, path: str | Path) -> None:
    dcp.save(_state(trainer), checkpoint_id=str(path))


def load(trainer: Trainer, path: str | Path) -> int:
    """Load into ``trainer`` in place; returns the step the checkpoint was taken at."""
    state = _state(trainer)
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(trainer.model, trainer.optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    step = int(state["step"])
    trainer.set_step(step)
    return step
