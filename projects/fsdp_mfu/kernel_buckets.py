"""GPU kernel time of a training step by kind (torch.profiler): the buckets, the busy time, and the shares every
train_step record carries (bench.Step.breakdown) and profile_step.py prints. Importable without torch.

Buckets, by kernel name (first match wins): attention (flash / cuDNN / FMHA), GEMM (cuBLAS / CUTLASS / nvjet),
Triton (Inductor's fused pointwise and reductions: norms, RoPE, SiLU·mul, residual adds, cross-entropy),
comm_copy (NCCL, FSDP2's copy-in / copy-out, casts, cat/split), optimizer (fused AdamW and the foreach kernels
of gradient clipping), other (eager embedding, ...). "idle" is the step's wall time not covered by a kernel:
launch gaps, host work, synchronisation.
"""
from __future__ import annotations

import re

BUCKETS = [  # first match wins
    ("attention", re.compile(r"flash|fmha|cudnn|sdpa|attention", re.I)),
    ("gemm", re.compile(r"gemm|nvjet|cutlass|sm90_xmma|cublas|ampere_|sm80_", re.I)),
    ("triton", re.compile(r"^triton_", re.I)),  # before the rest: Inductor names kernels after the ops they fuse
    ("comm_copy", re.compile(r"nccl|all_gather|reduce_scatter|copy|memcpy|memset|cat|split|chunk", re.I)),
    ("optimizer", re.compile(r"adam|multi_tensor|foreach|lpnorm|norm_kernel", re.I)),
]


def bucket(name: str) -> str:
    for label, rx in BUCKETS:
        if rx.search(name):
            return label
    return "other"


def is_kernel(e) -> bool:
    """A GPU kernel, memcpy or memset — not a user annotation (``Optimizer.step#AdamW.step``,
    ``FSDP::post_backward_reduce``: ranges that the profiler also draws on the GPU timeline, over kernels it
    already counts)."""
    import torch

    return e.device_type == torch.autograd.DeviceType.CUDA and not getattr(e, "is_user_annotation", False) \
        and not e.key.startswith(ANNOTATION_PREFIXES)


ANNOTATION_PREFIXES = ("FSDP::", "Optimizer.", "ProfilerStep", "## ")


def busy_union_ms(prof, steps: int) -> float:
    """ms per step during which at least one kernel ran: kernels on other streams (FSDP2's copies, NCCL) can
    overlap compute, so the sum of kernel times can exceed the time the GPU was busy."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events() if is_kernel(e))
    total, cur_start, cur_end = 0.0, None, None
    for start, end in spans:
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total / 1e3 / steps  # us -> ms


def kernel_buckets(prof, steps: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """ms per step by bucket, and the top kernels of each bucket."""
    kernels: dict[str, float] = {}
    names: dict[str, dict[str, float]] = {}
    for e in prof.key_averages():
        if not is_kernel(e):
            continue
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        if t <= 0:
            continue
        b = bucket(e.key)
        ms = t / 1e3 / steps
        kernels[b] = kernels.get(b, 0.0) + ms
        names.setdefault(b, {})[e.key[:140]] = names.get(b, {}).get(e.key[:140], 0.0) + ms
    top = {b: dict(sorted(v.items(), key=lambda kv: -kv[1])[:12]) for b, v in names.items()}
    return kernels, top


def profile_buckets(step, steps: int, sync) -> tuple[dict[str, float], dict[str, dict[str, float]], float]:
    """Run ``step()`` ``steps`` times under torch.profiler (CUDA kernels only): ms per step by bucket, the top
    kernels, and the busy (kernel-union) ms per step. Without CUDA the profiler records CPU ops only, and the
    buckets stay empty."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    act = ProfilerActivity.CUDA if torch.cuda.is_available() else ProfilerActivity.CPU
    with profile(activities=[act]) as prof:
        for _ in range(steps):
            step()
        sync()
    kernels, top = kernel_buckets(prof, steps)
    return kernels, top, busy_union_ms(prof, steps)


def breakdown_metrics(kernels: dict[str, float], step_ms: float, dense_flops: float,
                      attention_causal_flops: float, busy_ms: float | None = None) -> dict[str, tuple[float, str, bool]]:
    """The bench's extra metrics from a kernel breakdown: each bucket's share of the step; idle = the step's
    time with no kernel running, overlap = kernel time that ran beside other kernels (so the shares + idle -
    overlap = 100); what the GEMM and attention kernels achieve on the work the FLOPs formula counts for them."""
    out = {f"step_{b}_pct": (100 * kernels.get(b, 0.0) / step_ms, "% of step", False)
           for b in ("gemm", "attention", "triton", "optimizer", "comm_copy", "other")}
    total = sum(kernels.values())
    busy = total if busy_ms is None else busy_ms
    out["step_idle_pct"] = (100 * (step_ms - busy) / step_ms, "% of step", False)
    out["step_overlap_pct"] = (100 * (total - busy) / step_ms, "% of step", False)
    if kernels.get("gemm"):
        out["gemm_tflops"] = (dense_flops / (kernels["gemm"] * 1e-3) / 1e12, "TFLOP/s", True)
    if kernels.get("attention"):
        out["attention_causal_tflops"] = (attention_causal_flops / (kernels["attention"] * 1e-3) / 1e12,
                                          "TFLOP/s", True)
    return out
