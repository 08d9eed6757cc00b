"""Checks at a kernel's door: bad operands raise before anything is built or launched, with one line that names
the op and the argument. TypeError for what an operand is (not a tensor, its dtype), ValueError for its shape,
layout or device, as torch's own ops do.

    validate.tensors("bf16 gemm", {"A": A, "B": B}, ndim=2, dtypes=(torch.bfloat16,), contiguous=True,
                     nonempty=True)
    ...                                   # the op's own shape relations (A[M, K] @ B[N, K]^T)
    validate.device("bf16 gemm", {"A": A, "B": B}, ("cuda",))

The device check is separate, and meant to come last, so that a CPU test reaches every other check of a CUDA-only
op with CPU tensors. torch is imported when a check runs: the harness core imports without it.
"""
from __future__ import annotations

import os
from collections.abc import Mapping


def tensors(op: str, named: Mapping[str, object], *, ndim: int | None = None, dtypes: tuple | None = None,
            same_dtype: bool = False, same_shape: bool = False, contiguous: bool = False,
            nonempty: bool = False) -> None:
    """Every value of ``named`` (argument name -> value) is a tensor meeting each rule asked for:
    ``ndim`` dimensions, a dtype in ``dtypes``, one dtype or one shape for all, contiguous, no zero-size dim."""
    import torch

    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if ndim is not None and t.dim() != ndim:
            raise ValueError(f"{op}: {name} must be {ndim}-D, got shape {tuple(t.shape)}")
        if dtypes is not None and t.dtype not in dtypes:
            raise TypeError(f"{op}: {name} is {t.dtype}; supported: {', '.join(str(d) for d in dtypes)}")
        if contiguous and not t.is_contiguous():
            raise ValueError(f"{op}: {name} must be contiguous (strides {t.stride()}); pass {name}.contiguous()")
        if nonempty and t.numel() == 0:
            raise ValueError(f"{op}: {name} is empty (shape {tuple(t.shape)})")
    items = list(named.items())
    for name, t in items[1:]:
        first, t0 = items[0]
        if same_dtype and t.dtype != t0.dtype:
            raise TypeError(f"{op}: {name} is {t.dtype} but {first} is {t0.dtype}; they must match")
        if same_shape and t.shape != t0.shape:
            raise ValueError(f"{op}: {name} has shape {tuple(t.shape)} but {first} has {tuple(t0.shape)}")


def device(op: str, named: Mapping[str, object], types: tuple[str, ...], hint: str = "") -> None:
    """All tensors of ``named`` on one device, whose type is in ``types`` ("cuda", "cpu")."""
    items = list(named.items())
    first, t0 = items[0]
    for name, t in items:
        if t.device != t0.device:
            raise ValueError(f"{op}: {name} is on {t.device} but {first} is on {t0.device}; use one device")
    if t0.device.type not in types:
        raise ValueError(f"{op}: tensors are on {t0.device}; supported: {', '.join(types)}{hint}")


TRITON_HINT = " (CPU tensors only under TRITON_INTERPRET=1, which runs Triton kernels on the CPU)"


def triton_device_types() -> tuple[str, ...]:
    """Where a Triton kernel's operands may live: CUDA, or the CPU under the interpreter (and only there: the
    interpreter cannot read CUDA memory)."""
    return ("cpu",) if os.environ.get("TRITON_INTERPRET") == "1" else ("cuda",)
