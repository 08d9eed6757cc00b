"""The BF16 ladder's one registry: every rung's id, label, source, launcher and shape rules.

The bench, the tests, the lab stages' SASS/ncu loops (via ``python -m gpufolio_projects.gemm_ladder.bf16.registry``)
and the writeup all read this list. All rungs compute C[M,N] = A[M,K] @ B[N,K]^T in bf16 with fp32
accumulation (A and B row-major, so both operands are K-major: the layout wgmma reads without transposes).
Importable without torch.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from gpufolio.api import Unsupported

from .. import ladder

HERE = Path(__file__).resolve().parent
KERNEL_DIR = HERE / "kernels"
EXTENSION_NAME = "gpufolio_bf16_gemm"
BINDINGS = "bindings.cpp"


@dataclass(frozen=True)
class Rung(ladder.Rung):
    tile: tuple[int, int]  # (BM, BN) output tile of one CTA
    uses_wgmma: bool  # SASS must show HGMMA (checked by the tests and the lab's sass stage)
    needs_sm90a: bool  # uses wgmma / TMA / setmaxnreg; rungs 01-02 only need sm_80 instructions


RUNGS: tuple[Rung, ...] = (
    Rung("01_mma_sync_ldmatrix", "mma.sync + ldmatrix, swizzled smem", (128, 128), False, False),
    Rung("02_cp_async_pipeline", "+ 4-stage cp.async pipeline", (128, 128), False, False),
    Rung("03_tma_wgmma", "TMA + wgmma, 1 warpgroup", (128, 128), True, True),
    Rung("04_wgmma_two_consumers", "128x256 tile, 2 warpgroups, TMA ring", (128, 256), True, True),
    Rung("05_warp_specialized", "producer/consumer + setmaxnreg", (128, 256), True, True),
    Rung("06_persistent", "persistent, static tile scheduler", (128, 256), True, True),
    Rung("07_grouped_raster", "+ grouped tile order (L2 reuse)", (128, 256), True, True),
    Rung("08_cluster_multicast", "+ 2-CTA cluster, B multicast", (128, 256), True, True),
    Rung("09_tma_store_epilogue", "+ smem/TMA-store epilogue", (128, 256), True, True),
    Rung("10_cluster_pairs", "2-CTA clusters without multicast", (128, 256), True, True),
    Rung("11_whole_rounds", "+ grid of whole rounds (no partial last round)", (128, 256), True, True),
    Rung("12_multicast_one_issuer", "+ B multicast from one CTA of the pair", (128, 256), True, True),
    Rung("13_multicast_four_stages", "+ 4-stage ring, register epilogue", (128, 256), True, True),
    Rung("14_multicast_four_stages_tma_store", "+ 4-stage ring, TMA stores of half slabs", (128, 256), True, True),
    Rung("15_stream_k", "+ stream-K last round (all 132 SMs busy)", (128, 256), True, True),
)


def by_name(name: str) -> Rung:
    return ladder.by_name(RUNGS, name, "bf16")


def sources() -> tuple[str, ...]:
    """Extension sources relative to projects/gemm_ladder/ (what build.load_extension expects)."""
    return tuple(f"bf16/kernels/{f}" for f in [r.file for r in RUNGS] + [BINDINGS])


def check_shape(M: int, N: int, K: int) -> None:
    """Raise Unsupported for a problem no rung launches. The rules, and why:
    - M, N, K >= 1.
    - K % 8 == 0 and N % 8 == 0: rows of A, B (K elements) and C (N elements) must start on 16-byte
      boundaries for TMA tensor maps and 16-byte cp.async chunks, and a bf16 column pair is stored as one
      4-byte word (the Python side could pad; it refuses instead, before any launch).
    - sizes below 2^31 elements per operand (32-bit tile coordinates and offsets per row).
    Ragged M, N and K tails are handled inside the kernels (zero-filled loads, masked stores)."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if int(v) != v or v < 1:
            raise Unsupported(f"{name}={v}: dimensions must be positive integers")
    if K % 8:
        raise Unsupported(f"K={K}: rows of A and B must be 16-byte aligned (K % 8 == 0)")
    if N % 8:
        raise Unsupported(f"N={N}: rows of C must be 16-byte aligned (N % 8 == 0)")
    if max(M, N) * K >= 2**31 or M * N >= 2**31:
        raise Unsupported(f"{M}x{N}x{K}: operands of 2^31 elements or more are not supported")


def device_reason(rung: Rung) -> str | None:
    """None if this machine can run the rung, else why not (Variant.available). The extension is built for
    sm_90a only (one cubin), so even the mma.sync rungs need a compute-capability 9.0 GPU here."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    cc = torch.cuda.get_device_capability()
    if cc != (9, 0):
        what = "wgmma/TMA need sm_90a" if rung.needs_sm90a else "the extension is built for sm_90a only"
        return f"GPU is sm_{cc[0]}{cc[1]}; {what} (Hopper H100/H200)"
    return None


if __name__ == "__main__":  # the lab stages: `python -m ...registry ids|wgmma_ids`
    which = sys.argv[1] if len(sys.argv) > 1 else "ids"
    for r in RUNGS:
        if which == "ids" or (which == "wgmma_ids" and r.uses_wgmma):
            print(r.name)
