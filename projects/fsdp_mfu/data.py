"""Training data with no download: Python's own standard library source as bytes, and synthetic tokens.

Byte-level tokens (vocab 256): every file's bytes are a token sequence. The train/val split is by file, decided
by a hash of the file's path relative to the stdlib root, so it does not depend on listing order or on which
other files exist. Batches are a pure function of (seed, step): the GLOBAL batch is drawn first and each rank
takes its slice, so 1 rank and N ranks see the same global batch and resuming at step s sees batch s.
"""
from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import torch

VAL_PERCENT = 5  # files whose path hash falls in [0, 5) of 100 go to val
SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


def stdlib_files(root: Path | None = None) -> list[Path]:
    root = Path(root or sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if not SKIP_DIRS.intersection(p.relative_to(root).parts))


def is_val(relpath: str) -> bool:
    return int(hashlib.sha1(relpath.encode()).hexdigest(), 16) % 100 < VAL_PERCENT


def load_stdlib_bytes(root: Path | None = None, max_bytes: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, val) uint8 token streams; files are joined with a NUL byte (never in source) as separator."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    parts: dict[str, list[bytes]] = {"train": [], "val": []}
    for path in stdlib_files(root):
        parts["val" if is_val(path.relative_to(root).as_posix()) else "train"].append(path.read_bytes())
    out = []
    for split in ("train", "val"):
        blob = b"\x00".join(parts[split])
        if max_bytes is not None:
            blob = blob[:max_bytes]
        out.append(torch.frombuffer(bytearray(blob), dtype=torch.uint8))
    return out[0], out[1]


@dataclass(frozen=True)
class BatchSpec:
    global_batch: int  # sequences per step over all ranks
    seq_len: int
    rank: int = 0
    world_size: int = 1

    def __post_init__(self) -> None:
        if self.global_batch % self.world_size:
            raise ValueError(f"global batch {self.global_batch} does not split over {self.world_size} ranks")

    @property
    def local_batch(self) -> int:
        return self.global_batch // self.world_size


class TextBatches:
    """Random windows of a token stream. ``batch(step)`` -> (tokens, targets), each [local_batch, T] int64."""

    def __init__(self, stream: torch.Tensor, spec: BatchSpec, seed: int):
        if stream.numel() <= spec.seq_len + 1:
            raise ValueError(f"stream of {stream.numel()} tokens is too short for seq_len {spec.seq_len}")
        self.stream, self.spec, self.seed = stream, spec, seed

    def batch(self, step: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.spec
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        starts = torch.randint(0, self.stream.numel() - s.seq_len - 1, (s.global_batch,), generator=gen)
        mine = starts[s.rank * s.local_batch:(s.rank + 1) * s.local_batch]
        windows = torch.stack([self.stream[i:i + s.seq_len + 1] for i in mine.tolist()]).long()
        windows = windows.to(device) if device is not None else windows
        return windows[:, :-1], windows[:, 1:]


class SyntheticBatches:
    """Uniform random tokens: pure throughput, no host work beyond one randint per step."""

    def __init__(self, vocab_size: int, spec: BatchSpec, seed: int):
        self.vocab_size, self.spec, self.seed = vocab_size, spec, seed

    def batch(self, step: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.spec
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        full = torch.randint(0, self.vocab_size, (s.global_batch, s.seq_len + 1), generator=gen)
        mine = full[s.rank * s.local_batch:(s.rank + 1) * s.local_batch]
        mine = mine.to(device) if device is not None else mine
        return mine[:, :-1], mine[:, 1:]
