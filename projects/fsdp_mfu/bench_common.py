"""What the two benches share — train_step (bench.py) and scaling (scaling_bench.py): the tuned step's settings,
the check that a step trains, and a clean worker before a case. Importable without torch."""
from __future__ import annotations

import math
from collections.abc import Callable

from gpufolio.api import CheckResult

# The step as tuned on one H200 (README, "What leaves MFU on the table"); every choice here is model- or
# trainer-level, so every variant and every point runs with it (same params: the comparisons stay like for like):
#   sdpa=cudnn     cuDNN's SDPA backend (about twice FA2's fwd+bwd throughput at these shapes)
#   proj=fused     wqkv and w13: fewer, larger GEMMs (model.py)
#   clip=folded    the clip factor applied inside fused AdamW's one pass (trainer.py)
TUNED_STEP = {"sdpa": "cudnn", "proj": "fused", "clip": "folded"}
CHECK_STEPS = 2  # extra steps on the checked batch: the loss must fall over them


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
