"""Datasheet peaks (dense, no 2:4 sparsity) per GPU model, keyed by the name the stamp records (``env.gpu.name``,
which is torch's device name): the one table that the site's roofline and a project's "% of datasheet peak" read.

A model not listed has no peak: readers say so, never fall back on another card's (nanoGPT divided by an A100
peak on an H100 and reported 104% MFU). Names are matched exactly: an H100 PCIe or an H200 NVL has lower peaks
than the SXM parts listed here.
"""
from __future__ import annotations

DATASHEETS: dict[str, dict] = {
    # H200 SXM: bf16 1,979 TFLOPS "with sparsity" -> 989 dense; fp32 67; HBM3e 4.8 TB/s
    "NVIDIA H200": {"source": "NVIDIA H200 datasheet", "bf16_tflops": 989.0, "fp32_tflops": 67.0,
                    "hbm_gbps": 4800.0},
    # H100 SXM5 80 GB: the same GH100 tensor-core peaks; HBM3 3.35 TB/s
    "NVIDIA H100 80GB HBM3": {"source": "NVIDIA H100 SXM datasheet", "bf16_tflops": 989.0, "fp32_tflops": 67.0,
                              "hbm_gbps": 3350.0},
}


def peak(gpu: str | None, key: str) -> float | None:
    """The datasheet figure ``key`` (bf16_tflops, fp32_tflops, hbm_gbps) of GPU model ``gpu``; None if unlisted."""
    return DATASHEETS.get(gpu or "", {}).get(key)
