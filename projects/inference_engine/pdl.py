"""Programmatic dependent launch (PDL, Hopper+) for the decode kernels.

A batch-1 decode step is ~80 short kernels in a row, and each one normally starts only after the previous one
has drained: its launch, its first DRAM round trip and the previous kernel's tail are dead time, a few
microseconds per kernel against 5–20 µs of work. Under PDL a kernel is launched while the previous one still
runs; it streams its weights (which no earlier kernel writes) and then waits in ``gdc_wait`` for the previous
kernel to finish before it reads the activations.

The rule every kernel launched with ``launch_pdl=True`` keeps: call ``gdc_launch_dependents`` first (lets the
next kernel be scheduled once all of this one's programs have started) and ``gdc_wait`` unconditionally, in every
program, before loading anything an earlier kernel wrote or storing anything. Then a kernel cannot finish before
its predecessor has, so the chain stays ordered, and no store can race a read of an earlier kernel.
"""
from __future__ import annotations

import functools
import os

import torch


@functools.cache
def _supported(device_index: int) -> bool:
    if os.environ.get("TRITON_INTERPRET") == "1" or os.environ.get("GPUFOLIO_PDL", "1") == "0":
        return False
    if torch.cuda.get_device_capability(device_index)[0] < 9:
        return False
    try:
        import triton.language.extra.cuda as tl_cuda
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return False
    return hasattr(tl_cuda, "gdc_wait") and "launch_pdl" in getattr(CUDAOptions, "__dataclass_fields__", {})


def pdl_supported(device: torch.device) -> bool:
    """sm_90+, a Triton that has ``launch_pdl``, not the interpreter, and not switched off (GPUFOLIO_PDL=0)."""
    return device.type == "cuda" and _supported(device.index if device.index is not None
                                                else torch.cuda.current_device())
