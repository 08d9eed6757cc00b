"""The scaling curve's arithmetic: which points exist, their batches, whether they fit, and their efficiency.

Two ways to add GPUs:
  weak    a fixed per-rank batch B: the global batch is N·B, so each rank's work per step stays the same and
          the step should take as long at N as at 1; what grows is the gradient traffic's share.
  strong  a fixed global batch G: each rank gets G/N, so the step should get N times shorter; the per-step
          costs that do not shrink with the batch (optimizer, FSDP2's parameter traffic) take a growing share.
The N=1 point of both is the same measurement when B = G (``base``).

Efficiency, both kinds alike, against the smallest measured world size N0 of the same line (N0 = 1 where one
GPU holds the model):
  efficiency(N) = tok_s(N) / ((N / N0) · tok_s(N0))
Under weak scaling that is the throughput ratio; under strong scaling tokens per step are fixed, so it is the
classic T(N0)·N0 / (T(N)·N). Both are 1 for perfect scaling.

Strategies: ddp (every rank holds every parameter, gradients all-reduced), fsdp2 (every parameter sharded over
all N ranks), hsdp (sharded within groups of ``hsdp_shard`` ranks, replicated across them: the layout of N/shard
nodes; on one 8-GPU node, 2 groups of 4). A point runs only where ``memory.predict`` says it fits one GPU; DDP
does not fit the 8B shape at any batch (16 bytes of training state per parameter, ~120 GiB, plus autocast's
bf16 weight copies), so that model is FSDP2 and HSDP only.

Importable without torch: the bench's configs read it on machines with none.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

STRATEGIES = ("ddp", "fsdp2", "hsdp")
SCALINGS = ("base", "weak", "strong")
GPU_COUNTS = (1, 2, 4, 8)
# Memory of one H200 as CUDA reports it (about 139 GiB; the case reads the real figure from the device), and the
# share a prediction may claim: memory.py leaves out allocator rounding, fragmentation and NCCL's buffers.
GPU_MEMORY_GIB = 139.0
FIT_SHARE = 0.9


@dataclass(frozen=True)
class Point:
    """One measurement of a scaling line: a model on ``gpus`` GPUs under ``strategy``, ``batch_per_rank``
    sequences of ``seq`` tokens on each rank."""

    model: str
    strategy: str
    scaling: str
    gpus: int
    batch_per_rank: int
    seq: int
    hsdp_shard: int = 0  # hsdp: ranks per shard group (0 for ddp / fsdp2)
    reshard: bool = True  # fsdp2 / hsdp: reshard_after_forward (ZeRO-3); False keeps gathered blocks to backward

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy {self.strategy!r} not in {STRATEGIES}")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling {self.scaling!r} not in {SCALINGS}")
        if self.gpus <= 0 or self.batch_per_rank <= 0 or self.seq <= 0:
            raise ValueError(f"gpus, batch and seq must be positive: {self}")
        if self.scaling == "base" and self.gpus != 1:
            raise ValueError("the base point is the one-GPU point")
        if self.strategy == "hsdp":
            if not 0 < self.hsdp_shard < self.gpus or self.gpus % self.hsdp_shard:
                raise ValueError(f"hsdp needs a shard group size that divides {self.gpus} GPUs into two or "
                                 f"more groups, got {self.hsdp_shard}")
        elif self.hsdp_shard:
            raise ValueError(f"hsdp_shard is for the hsdp strategy, not {self.strategy}")

    @property
    def global_batch(self) -> int:
        return self.batch_per_rank * self.gpus

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq

    @property
    def mode(self) -> str:
        """The trainer's mode: HSDP is FSDP2 on a 2-D mesh."""
        return "ddp" if self.strategy == "ddp" else "fsdp2"

    @property
    def shard_ranks(self) -> int:
        """Ranks each parameter is sharded over (1 for DDP: a full replica per rank)."""
        return {"ddp": 1, "fsdp2": self.gpus, "hsdp": self.hsdp_shard}[self.strategy]


def weak(model: str, strategy: str, gpus: int, batch_per_rank: int, seq: int, **kw) -> Point:
    """Fixed per-rank batch: the global batch grows with the GPUs."""
    return Point(model, strategy, "weak" if gpus > 1 else "base", gpus, batch_per_rank, seq, **kw)


def strong(model: str, strategy: str, gpus: int, global_batch: int, seq: int, **kw) -> Point:
    """Fixed global batch, split over the GPUs."""
    if global_batch % gpus:
        raise ValueError(f"a global batch of {global_batch} does not split over {gpus} GPUs")
    return Point(model, strategy, "strong" if gpus > 1 else "base", gpus, global_batch // gpus, seq, **kw)


def efficiency(tok_s: float, gpus: int, base_tok_s: float, base_gpus: int = 1) -> float:
    """Throughput at ``gpus`` against perfect linear scaling from the line's base point (module docstring)."""
    if min(tok_s, base_tok_s) <= 0 or gpus < base_gpus or base_gpus <= 0:
        raise ValueError(f"efficiency needs positive throughputs and gpus >= base_gpus: "
                         f"{tok_s}, {gpus}, {base_tok_s}, {base_gpus}")
    return tok_s / (gpus / base_gpus * base_tok_s)


def predicted_peak_gib(p: Point, compiled: bool = True, fused_proj: bool = True) -> float:
    """memory.py's peak for one rank of ``p`` (bf16; HSDP is FSDP2 over its shard group)."""
    from .configs import get_config
    from .memory import predict

    return predict(get_config(p.model), p.batch_per_rank, p.seq, mode=p.mode, world_size=p.shard_ranks,
                   compiled=compiled, reshard_after_forward=p.reshard, fused_proj=fused_proj).peak / 2**30


def fits(p: Point, capacity_gib: float = GPU_MEMORY_GIB) -> bool:
    return predicted_peak_gib(p) <= FIT_SHARE * capacity_gib


@dataclass(frozen=True)
class Line:
    """A sweep over GPU_COUNTS at one model and batch: weak (per-rank ``batch``) or strong (global ``batch``)."""

    model: str
    scaling: str
    batch: int
    seq: int
    reshard: bool
    hsdp_shard_at_8: int = 4  # HSDP at 8 GPUs: 2 groups of 4 (two 4-GPU "nodes" inside one NVLink domain)

    def point(self, strategy: str, gpus: int) -> Point:
        shard = self.hsdp_shard_at_8 if strategy == "hsdp" else 0
        reshard = self.reshard if strategy != "ddp" else True
        make = weak if self.scaling == "weak" else strong
        return make(self.model, strategy, gpus, self.batch, self.seq, hsdp_shard=shard, reshard=reshard)


# The sweep. ~1B: the one-GPU headline's B=32 x 2048, so weak per-rank B=32 and strong G=32 share their N=1 point
# (strong reaches 4 sequences per rank at 8 GPUs); FSDP2 keeps its one-GPU choice of no resharding. 8B-shaped:
# one 8192-token sequence per rank (torchtitan's Llama-3-8B setting), ZeRO-3 resharding; strong G=8.
LINES = (
    Line("llama_1b", "weak", 32, 2048, reshard=False),
    Line("llama_1b", "strong", 32, 2048, reshard=False),
    Line("llama_8b", "weak", 1, 8192, reshard=True),
    Line("llama_8b", "strong", 8, 8192, reshard=True),
)


def points(line: Line) -> list[Point]:
    """Every point of a line, each strategy where it applies (HSDP at 8 GPUs only), the base point once."""
    out = []
    for gpus in GPU_COUNTS:
        for strategy in STRATEGIES:
            if strategy == "hsdp" and gpus != 8:
                continue
            out.append(line.point(strategy, gpus))
    return out


def as_params(p: Point) -> dict:
    return asdict(p)
