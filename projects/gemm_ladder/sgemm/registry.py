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

HERE = Path(__file__).resolve().parent
EXTENSION = "gpufolio_sgemm"
# Paths relative to projects/gemm_ladder/ (what build.load_extension expects).
COMMON_SOURCES = ("sgemm/sweep_block.cu", "sgemm/sweep_warp.cu", "sgemm/sweep_cp_async.cu", "sgemm/bindings.cpp")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Rung:
    id: str                       # "01" .. : the order of the ladder
    technique: str                # file stem after the id: "naive"
    label: str                    # what the site shows
    launcher: str                 # the C launcher in the .cu file
    shapes: Literal["any", "nk4"]
    block_tile: tuple[int, int]   # (rows, columns) of C per block: the grid is ceil(N/cols) x ceil(M/rows)
    threads: int                  # threads per block
    max_gflop: float | None = None

    def __post_init__(self) -> None:
        if not (len(self.id) == 2 and self.id.isdigit()):
            raise ValueError(f"rung id {self.id!r} must be two digits")
        if self.shapes not in ("any", "nk4"):
            raise ValueError(f"rung {self.id}: unknown shapes {self.shapes!r}")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise ValueError(f"rung {self.id}: {self.threads} threads is not whole warps within 1024")

    @property
    def name(self) -> str:
        """Variant name in records and markers: the file stem, e.g. "07_bank_conflicts"."""
        return f"{self.id}_{self.technique}"

    @property
    def file(self) -> str:
        return f"sgemm/{self.name}.cu"

    @property
    def binding(self) -> str:
        return f"rung{self.id}"

    def grid(self, M: int, N: int) -> tuple[int, int]:
        """(gridDim.x, gridDim.y) the launcher uses. Rung 01 puts rows on x (its uncoalesced mapping)."""
        rows, cols = self.block_tile
        if self.id == "01":
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
    Rung("01", "naive", "01 naive", "sgemm_01_naive", "any", (32, 32), 1024, max_gflop=20),
    Rung("02", "gmem_coalesce", "02 global-memory coalescing", "sgemm_02_gmem_coalesce", "any", (32, 32), 1024,
         max_gflop=140),
    Rung("03", "smem_tiling", "03 shared-memory tiling", "sgemm_03_smem_tiling", "any", (32, 32), 1024,
         max_gflop=140),
    Rung("04", "blocktile_1d", "04 1D block tiling", "sgemm_04_blocktile_1d", "any", (64, 64), 512),
    Rung("05", "blocktile_2d", "05 2D block tiling", "sgemm_05_blocktile_2d", "any", (128, 128), 256),
    Rung("06", "vectorize", "06 float4 loads, A transposed", "sgemm_06_vectorize", "nk4", (128, 128), 256),
    Rung("07", "bank_conflicts", "07 bank conflicts removed", "sgemm_07_bank_conflicts", "nk4", (128, 128), 256),
    Rung("08", "double_buffer", "08 double buffering", "sgemm_08_double_buffer", "nk4", (128, 128), 256),
    Rung("09", "autotuned_sm90", "09 tile sizes tuned for H200", "sgemm_09_autotuned_sm90", "nk4", (128, 256), 256),
    Rung("10", "warptiling", "10 warp tiling", "sgemm_10_warptiling", "nk4", (128, 256), 256),
    Rung("11", "cp_async_pipeline", "11 cp.async 3-stage pipeline", "sgemm_11_cp_async_pipeline", "nk4", (128, 256),
         256),
    Rung("12", "split_k", "12 split-K for small grids", "sgemm_12_split_k", "nk4", (128, 128), 256),
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
    for rung in RUNGS:
        if rung.name == name:
            return rung
    raise KeyError(f"no SGEMM rung {name!r}; rungs are {[r.name for r in RUNGS]}")


def sources() -> tuple[str, ...]:
    return tuple(r.file for r in RUNGS) + COMMON_SOURCES


def load():
    """Build (cold: about 20 s on the GPU box) or load (warm: an import) the ladder's extension."""
    from gpufolio_projects.gemm_ladder.build import load_extension

    return load_extension(EXTENSION, sources())


def launch(ext, rung: Rung, A, B, C) -> None:
    """C = A @ B with ``rung``; raises RuntimeError with the binding's reason if it refused or failed.

    The bindings return their error as a string instead of throwing (see bindings.cpp)."""
    why = getattr(ext, rung.binding)(A, B, C)
    if why:
        raise RuntimeError(why)


def sweep(ext, i: int, A, B, C) -> None:
    """C = A @ B with sweep config ``i`` (sweep_*.cu); raises RuntimeError like ``launch``."""
    why = ext.sweep(i, A, B, C)
    if why:
        raise RuntimeError(why)
