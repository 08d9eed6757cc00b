"""The one list of SGEMM rungs: read by bench.py, the tests, the profiling scripts and the site.

Imports without torch (the site reads labels on machines without it). Each rung names its source file, the
C launcher in it, the Python binding in bindings.cpp, the shapes it accepts and its grid geometry.

Shapes:
  "any"  any M, N, K >= 1: ragged tiles are zero-filled on load and masked on store.
  "nk4"  N and K multiples of 4 (rows are 16 bytes, so float4 loads stay aligned); any M. A float4 is then
         either wholly inside the matrix or wholly outside, so the same zero-fill/mask covers ragged tiles.

max_gflop: the bench does not time a rung above this much work (2*M*N*K / 1e9): the early rungs would take
seconds per call at 8192^3 (rung 01 runs at well under 1 TFLOP/s), and a call over ~0.1 s costs more of the
8-minute budget than it teaches. It is a timing budget, not a correctness limit: the kernels themselves run
any size (the GPU tests call them directly).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpufolio.api import Unsupported

from .. import ladder

HERE = Path(__file__).resolve().parent
EXTENSION = "gpufolio_sgemm"
BINDINGS = "bindings.cpp"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Rung(ladder.Rung):
    shapes: Literal["any", "nk4"]
    block_tile: tuple[int, int]   # (rows, columns) of C per block: the grid is ceil(N/cols) x ceil(M/rows)
    threads: int                  # threads per block
    max_gflop: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.shapes not in ("any", "nk4"):
            raise ValueError(f"rung {self.name}: unknown shapes {self.shapes!r}")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise ValueError(f"rung {self.name}: {self.threads} threads is not whole warps within 1024")

    @property
    def launcher(self) -> str:
        """The C launcher the rung's file defines (SGEMM_LAUNCHER) and bindings.cpp binds."""
        return f"sgemm_{self.name}"

    def grid(self, M: int, N: int) -> tuple[int, int]:
        """(gridDim.x, gridDim.y) the launcher uses. Rung 01 puts rows on x (its uncoalesced mapping)."""
        rows, cols = self.block_tile
        if self.number == 1:
            return ceil_div(M, rows), ceil_div(N, cols)
        return ceil_div(N, cols), ceil_div(M, rows)

    def check_shape(self, M: int, N: int, K: int) -> None:
        """Raise Unsupported for shapes the kernel refuses (the binding would TORCH_CHECK them too)."""
        if min(M, N, K) < 1:
            raise Unsupported(f"{self.name}: M, N, K must be >= 1, got {M}x{N}x{K}")
        if max(self.grid(M, N)[1], 0) > 65535:
            raise Unsupported(f"{self.name}: grid y {self.grid(M, N)[1]} exceeds 65535")
        if self.shapes == "nk4" and (N % 4 or K % 4):
            raise Unsupported(f"{self.name}: float4 rows need N and K multiples of 4, got N={N} K={K}")

    def check_budget(self, M: int, N: int, K: int) -> None:
        """Raise Unsupported where timing this rung would cost too much of the bench budget."""
        gflop = 2 * M * N * K / 1e9
        if self.max_gflop is not None and gflop > self.max_gflop:
            raise Unsupported(f"{self.name}: {gflop:.0f} GFLOP is over its timing budget of {self.max_gflop:.0f} "
                              "(too slow to time here; correctness is tested at smaller sizes)")


# 2*2048^3 = 17 GFLOP; 2*4096^3 = 137 GFLOP.
RUNGS: tuple[Rung, ...] = (
    Rung("01_naive", "01 naive", "any", (32, 32), 1024, max_gflop=20),
    Rung("02_gmem_coalesce", "02 global-memory coalescing", "any", (32, 32), 1024, max_gflop=140),
    Rung("03_smem_tiling", "03 shared-memory tiling", "any", (32, 32), 1024, max_gflop=140),
    Rung("04_blocktile_1d", "04 1D block tiling", "any", (64, 64), 512),
    Rung("05_blocktile_2d", "05 2D block tiling", "any", (128, 128), 256),
    Rung("06_vectorize", "06 float4 loads, A transposed", "nk4", (128, 128), 256),
    Rung("07_bank_conflicts", "07 bank conflicts removed", "nk4", (128, 128), 256),
    Rung("08_double_buffer", "08 double buffering", "nk4", (128, 128), 256),
    Rung("09_autotuned_sm90", "09 tile sizes tuned for H200", "nk4", (128, 256), 256),
    Rung("10_warptiling", "10 warp tiling", "nk4", (128, 256), 256),
    Rung("11_cp_async_pipeline", "11 cp.async 3-stage pipeline", "nk4", (128, 256), 256),
    Rung("12_split_k", "12 split-K for small grids", "nk4", (128, 128), 256),
)


H200_SMS = 132


def split_k_splits(M: int, N: int, K: int, sms: int = H200_SMS) -> int:
    """Rung 12's K-split count (mirror of sgemm_12_splits in 12_split_k.cu; a test compares the two).

    Split only when the 128x128 output tiles cannot fill the 2 * sms resident block slots, into as many runs as
    fit in one wave of them, but keep >= 8 K-tiles of 16 per run and at most 16 runs."""
    tiles, slots = ceil_div(M, 128) * ceil_div(N, 128), 2 * sms
    if tiles >= slots:
        return 1
    by_k = ceil_div(K, 16) // 8
    wanted = slots // tiles
    return min(wanted, 16) if wanted < by_k else max(by_k, 1)


def by_name(name: str) -> Rung:
    return ladder.by_name(RUNGS, name, "SGEMM")


def sources() -> tuple[str, ...]:
    """Extension sources relative to projects/gemm_ladder/ (what build.load_extension expects)."""
    return tuple(f"sgemm/{f}" for f in [r.file for r in RUNGS] + [BINDINGS])


def load():
    """Build (cold: about 20 s on the GPU box) or load (warm: an import) the ladder's extension."""
    from gpufolio_projects.gemm_ladder.build import load_extension

    return load_extension(EXTENSION, sources())
