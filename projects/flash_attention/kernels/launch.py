"""Plain launchers for the attention kernels: build TMA descriptors, pick a config, launch.

They take validated, contiguous tensors (``attention.py`` checks and prepares them):
    q: [B, H, Sq, D]   k, v: [B, Hkv, Sk, D]   (H % Hkv == 0)
"""
from __future__ import annotations

import functools
import math
import os

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from .bwd import _bwd_dkdv_kernel, _bwd_dq_kernel, _bwd_preprocess_kernel, _dq_convert_kernel
from .fwd import LOG2E, _attn_fwd_kernel
from .tuning import TUNER, KernelConfig, candidates, length_class

PREPROCESS_BLOCK = 128
_REPORTED: set[tuple] = set()


def _report(name: str, cfg: KernelConfig, compiled) -> None:
    """With GPUFOLIO_FA_TUNE_VERBOSE, print each compiled kernel's registers, spills and shared memory once:
    spills and occupancy are the first suspects when a config is slow."""
    if not os.environ.get("GPUFOLIO_FA_TUNE_VERBOSE") or compiled is None:
        return
    key = (name, str(cfg), getattr(compiled, "hash", None))
    if key in _REPORTED:
        return
    _REPORTED.add(key)
    meta = getattr(compiled, "metadata", None)
    print(f"[fa-kernel] {name} {cfg}: regs={getattr(compiled, 'n_regs', '?')} "
          f"spills={getattr(compiled, 'n_spills', '?')} smem={getattr(meta, 'shared', '?')}", flush=True)


def _rows(t: torch.Tensor) -> torch.Tensor:
    """[B, H, S, D] contiguous -> its [B·H·S, D] view (what the descriptors index)."""
    return t.view(-1, t.shape[-1])


def _desc(t: torch.Tensor, block_rows: int) -> TensorDescriptor:
    rows = _rows(t)
    return TensorDescriptor(rows, list(rows.shape), list(rows.stride()), [block_rows, rows.shape[1]])


def _precision(dtype: torch.dtype) -> str:
    # fp32 runs only under the interpreter (tests); make its dots exact there. 16-bit dots ignore this.
    return "ieee" if dtype == torch.float32 else "tf32"


@functools.cache
def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def _tune_key(kernel: str, q: torch.Tensor, k: torch.Tensor, causal: bool) -> str:
    gpu = _device_name(q.device)
    return "|".join([kernel, gpu, triton.__version__, str(q.dtype), f"D{q.shape[-1]}", f"causal{int(causal)}",
                     length_class(q.shape[2], k.shape[2])])


def attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float,
             config: KernelConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns o [B, H, Sq, D] (q's dtype) and lse [B·H, Sq] fp32 in log2 units (see fwd.py)."""
    B, H, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    lse = torch.empty((B * H, Sq), device=q.device, dtype=torch.float32)

    def launch(cfg: KernelConfig) -> None:
        grid = (triton.cdiv(Sq, cfg.block_m), B * H)
        compiled = _attn_fwd_kernel[grid](
            _desc(q, cfg.block_m), _desc(k, cfg.block_n), _desc(v, cfg.block_n), o, lse,
            scale * LOG2E, Sq, Sk, H, H // Hkv,
            HEAD_DIM=D, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=causal, PRECISION=_precision(q.dtype),
            WARP_SPECIALIZE=cfg.warp_specialize, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        _report(f"fwd causal={causal}", cfg, compiled)

    cfg = config or TUNER.pick(_tune_key("fwd", q, k, causal), candidates("fwd", D), launch, lambda: [o, lse])
    launch(cfg)
    return o, lse


def attn_bwd(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
             lse: torch.Tensor, causal: bool, scale: float,
             dkdv_config: KernelConfig | None = None, dq_config: KernelConfig | None = None,
             atomic_dq: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Returns dq, dk, dv (each in its input's shape and dtype). do must be contiguous like o.
    atomic_dq: dQ accumulated with fp32 atomics inside the dK/dV kernel (bwd.py) instead of its own kernel."""
    B, H, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    group = H // Hkv
    delta = torch.empty_like(lse)
    n_rows = B * H * Sq
    _bwd_preprocess_kernel[(triton.cdiv(n_rows, PREPROCESS_BLOCK),)](
        o, do, delta, n_rows, HEAD_DIM=D, BLOCK=PREPROCESS_BLOCK, num_warps=4)

    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    qk_scale = scale * LOG2E
    prec = _precision(q.dtype)

    # atomic_dq: [B·H·Sq, D] fp32, zeroed before every launch (tuning launches included).
    dq_acc = torch.empty((n_rows, D), device=q.device, dtype=torch.float32) if atomic_dq else delta

    def launch_dkdv(cfg: KernelConfig) -> None:
        if atomic_dq:
            dq_acc.zero_()
        grid = (triton.cdiv(Sk, cfg.block_n), B * Hkv)
        compiled = _bwd_dkdv_kernel[grid](
            _desc(q, cfg.block_m), _desc(k, cfg.block_n), _desc(v, cfg.block_n), _desc(do, cfg.block_m),
            lse, delta, dk, dv, dq_acc, qk_scale, scale, Sq, Sk, H, group,
            HEAD_DIM=D, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=causal, PRECISION=prec,
            ATOMIC_DQ=atomic_dq, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        _report(f"bwd_dkdv causal={causal} atomic_dq={atomic_dq}", cfg, compiled)

    def launch_dq(cfg: KernelConfig) -> None:
        grid = (triton.cdiv(Sq, cfg.block_m), B * H)
        compiled = _bwd_dq_kernel[grid](
            _desc(q, cfg.block_m), _desc(k, cfg.block_n), _desc(v, cfg.block_n), _desc(do, cfg.block_m),
            lse, delta, dq, qk_scale, scale, Sq, Sk, H, group,
            HEAD_DIM=D, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=causal, PRECISION=prec,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        _report(f"bwd_dq causal={causal}", cfg, compiled)

    dkdv_name = "bwd_dkdv_atomic" if atomic_dq else "bwd_dkdv"
    cfg = dkdv_config or TUNER.pick(_tune_key(dkdv_name, q, k, causal), candidates(dkdv_name, D), launch_dkdv,
                                    lambda: [dk, dv])
    launch_dkdv(cfg)
    if atomic_dq:
        _dq_convert_kernel[(triton.cdiv(n_rows, PREPROCESS_BLOCK),)](
            dq_acc, dq, scale, n_rows, HEAD_DIM=D, BLOCK=PREPROCESS_BLOCK, num_warps=4)
        return dq, dk, dv
    cfg = dq_config or TUNER.pick(_tune_key("bwd_dq", q, k, causal), candidates("bwd_dq", D), launch_dq,
                                  lambda: [dq])
    launch_dq(cfg)
    return dq, dk, dv


def default_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)
