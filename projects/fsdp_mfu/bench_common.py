"""What the two benches share — train_step (bench.py) and scaling (scaling_bench.py): the tuned step's settings,
the headline metric (MFU against the GPU's datasheet peak), the check that a step trains, and a clean worker
before a case. Importable without torch."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from gpufolio import datasheets
from gpufolio.api import CheckResult, Metric, Unsupported, Work

# The step as tuned on one H200 (README, "What leaves MFU on the table"); every choice here is model- or
# trainer-level, so every variant and every point runs with it (same params: the comparisons stay like for like):
#   sdpa=cudnn     cuDNN's SDPA backend (about twice FA2's fwd+bwd throughput at these shapes)
#   proj=fused     wqkv and w13: fewer, larger GEMMs (model.py)
#   clip=folded    the clip factor applied inside fused AdamW's one pass (trainer.py)
TUNED_STEP = {"sdpa": "cudnn", "proj": "fused", "clip": "folded"}
CHECK_STEPS = 2  # extra steps on the checked batch: the loss must fall over them


# MFU's unit names its ceiling; which GPU's datasheet it is, the record's stamp says (env.gpu.name).
MFU_UNIT = "% of datasheet bf16 dense peak"
# A dry run has no GPU: it reads this card's datasheet so the whole path runs; dry records are smoke tests of the
# path on CPU and tiny sizes, never numbers.
DRY_RUN_GPU = "NVIDIA H200"


@dataclass(frozen=True)
class StepWork(Work):
    """A step's work over all its ranks, how many GPUs shared it, and the datasheet bf16 dense peak of one."""

    gpus: int = 1
    peak_tflops: float | None = None


@dataclass(frozen=True)
class MfuMetric(Metric):
    """The headline: model FLOPs per second per GPU as a % of that GPU's datasheet peak. ``work.flops`` is the
    step's model FLOPs over all ranks (6·N + attention per token, flops.py), so it is divided by ``work.gpus``."""

    def value(self, work: Work, median_s: float) -> float:
        if work.flops is None or not isinstance(work, StepWork) or not work.peak_tflops:
            raise ValueError("the MFU metric needs StepWork with flops and the GPU's datasheet peak")
        return 100 * work.flops / work.gpus / median_s / (work.peak_tflops * 1e12)


MFU = MfuMetric("mfu", MFU_UNIT, True, "flops")


def datasheet_peak_tflops(device) -> float:
    """The datasheet bf16 dense peak (TFLOP/s) of the GPU a case runs on, from the harness's table
    (gpufolio.datasheets); an unlisted GPU is refused (``Unsupported``, a skipped record saying so), never given
    another card's peak."""
    if device.type != "cuda":
        name = DRY_RUN_GPU
    else:
        import torch

        name = torch.cuda.get_device_name(device)
    tflops = datasheets.peak(name, "bf16_tflops")
    if tflops is None:
        raise Unsupported(f"MFU needs the GPU's datasheet bf16 peak, and gpufolio.datasheets lists none for {name!r}")
    return tflops


def loss_falls(first: float, step: Callable[[], float], subject: str = "loss") -> CheckResult:
    """A training step has no elementwise reference: it passes when the loss is finite and lower after
    CHECK_STEPS more steps on the same batch (``step`` runs one and returns its loss)."""
    losses = [float(first)] + [float(step()) for _ in range(CHECK_STEPS)]
    finite = all(math.isfinite(v) for v in losses)
    falls = losses[-1] < losses[0]
    return CheckResult(passed=finite and falls,
                       reference=f"{subject} finite, and lower after {CHECK_STEPS} more steps on the same batch",
                       detail={"losses": losses, "finite": finite, "falls": falls})


def fresh_process_state(device) -> None:
    """The worker may have run other cases: drop their compiled graphs and cached blocks first."""
    import gc

    import torch

    torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
