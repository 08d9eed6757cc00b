"""gemm_ladder's benches: the FP32 SGEMM ladder (sgemm/) and the BF16 Hopper ladder (bf16/).

Importable without torch: the site reads the metadata on machines without a GPU. A ladder that fails to import
fails this module: a broken bench is an error to fix, not a bench that silently disappears from the records.
"""
from __future__ import annotations

from gpufolio.api import Bench

from .bf16.bench import BENCHES as BF16_BENCHES
from .sgemm.bench import SGEMM_BENCH

BENCHES: list[Bench] = [SGEMM_BENCH, *BF16_BENCHES]
