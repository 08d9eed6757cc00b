"""gemm_ladder's benches: the FP32 SGEMM ladder (sgemm/) and, when present, the BF16 Hopper ladder (bf16/).

Importable without torch: the site reads the metadata on machines without a GPU.
"""
from __future__ import annotations

import importlib.util
import warnings

from gpufolio.api import Bench

from .sgemm.bench import SGEMM_BENCH


def bf16_benches() -> list[Bench]:
    """The BF16 ladder's benches, built by another part of the project; none until its bench.py exists."""
    if importlib.util.find_spec("gpufolio_projects.gemm_ladder.bf16.bench") is None:
        return []
    try:
        from .bf16.bench import BENCHES as bf16
    except Exception as exc:  # noqa: BLE001 - a half-built bf16 ladder must not take the sgemm bench down
        warnings.warn(f"gemm_ladder: bf16 benches not loaded: {type(exc).__name__}: {exc}", stacklevel=2)
        return []
    return list(bf16)


BENCHES: list[Bench] = [SGEMM_BENCH, *bf16_benches()]
