"""The batch-1 GEMV sweep behind ``gemv_configs.json``: every decode weight shape of the model, each candidate
launch config of ``triton_gemv.fused_linear`` in the mode the fused step runs it (norm prologue, residual or
SiLU·mul epilogue, fp32 logits), against cuBLAS doing the same work unfused (its GEMV plus our elementwise
kernel), in GB/s of weights.

Timing: one CUDA graph of the call over each of the model's 16 layer weights (4 passes over the LM head), so
L2 holds none of the weights a call reads and the in-graph launch gaps of the real step are included; the
graph is replayed and timed with CUDA events (median of 7 timings of 10 replays).

    python -m gpufolio_projects.inference_engine.lab.profile_decode --out DIR --stages gemv   (on the GPU)

writes DIR/gemv_configs.json (the fastest config per shape, with the measurements) and installs it for the
stages after it in the same process; copy it next to triton_gemv.py to make it the engine's table.
"""
from __future__ import annotations

import json
import statistics
from collections.abc import Callable

from ..decode_probe import replay_ms
from ..triton_gemv import config_key


def candidates(K: int, silu_mul: bool) -> list[dict]:
    """M = 1 launch configs worth timing for a [*, K] weight: whole rows in one tile ("one shot") with 1-16
    rows per program, held to 32K weight elements per program (64 KB: more spills registers); a few K loops
    with and without software pipelining."""
    out = []
    block_k = 1 << (K - 1).bit_length()
    if block_k <= 8192:
        for block_n in (1, 2, 4, 8, 16):
            elems = block_n * block_k * (2 if silu_mul else 1)
            for warps in (4, 8):
                if (warps == 4 and elems <= 16384) or (warps == 8 and 4096 <= elems <= 32768):
                    out.append(dict(BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=1,
                                    USE_DOT=False))
    for block_n, bk, stages in ((8, 512, 1), (8, 512, 3), (16, 512, 3), (4, 1024, 3)):
        if bk < K:
            out.append(dict(BLOCK_N=block_n, BLOCK_K=bk, num_warps=4, num_stages=stages, USE_DOT=False))
    return out


def graph_us(torch, fn: Callable, weights: list, reps: int = 10, trials: int = 7) -> float:
    """µs per call of fn(w), w cycling through weights, inside one CUDA graph (launch gaps included)."""
    for w in weights:  # compile, settle workspaces
        fn(w)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=torch.cuda.graph_pool_handle()):
        for w in weights:
            fn(w)
    return statistics.median(replay_ms(graph, reps) * 1e3 / len(weights) for _ in range(trials))


def decode_shapes(model) -> dict[str, tuple[list, dict]]:
    """name -> (weights, mode) for the five GEMVs of the fused decode step."""
    layers = model.layers
    return {
        "qkv (norm)": ([ly.self_attn.qkv_proj.weight for ly in layers], dict(norm=True)),
        "o (residual)": ([ly.self_attn.o_proj.weight for ly in layers], dict(residual=True)),
        "gate_up (norm+silu)": ([ly.mlp.gate_up_proj.weight for ly in layers], dict(norm=True, silu=True)),
        "down (residual)": ([ly.mlp.down_proj.weight for ly in layers], dict(residual=True)),
        "lm_head (norm, fp32)": ([model.lm_head.weight] * 4, dict(norm=True, fp32=True)),
    }


def sweep(torch, model, log, out_path: str) -> dict[str, dict]:
    """Time every candidate per shape; write and return {config key: fastest config}."""
    import torch.nn.functional as F

    from .. import triton_gemv
    from ..triton_gemv import fused_linear
    from ..triton_ops import add_rmsnorm, silu_mul

    nw, eps = model.norm.weight, model.config.rms_norm_eps
    table, report = {}, {}
    for name, (ws, mode) in decode_shapes(model).items():
        N, K = ws[0].shape
        silu = mode.get("silu", False)
        n_out = N // 2 if silu else N
        x = torch.randn(1, K, device="cuda", dtype=ws[0].dtype)
        res = torch.randn(1, n_out, device="cuda", dtype=ws[0].dtype)
        gb = ws[0].numel() * ws[0].element_size() / 1e9

        def ours(w, cfg, x=x, res=res, mode=mode, silu=silu):
            return fused_linear(x, w, norm_weight=nw if mode.get("norm") else None, eps=eps,
                                residual=res if mode.get("residual") else None, silu_mul=silu,
                                out_dtype=torch.float32 if mode.get("fp32") else None, config=cfg)

        def cublas(w, x=x, res=res, mode=mode, silu=silu):  # the same work unfused: our kernels around cuBLAS
            h = add_rmsnorm(x, None, nw, eps) if mode.get("norm") else x
            y = F.linear(h, w)
            if silu:
                y = silu_mul(y)
            if mode.get("residual"):
                res.add_(y)
            return y.float() if mode.get("fp32") else y

        rows = []
        for cfg in candidates(K, silu) + [triton_gemv.default_config(n_out, K, 16)]:
            try:
                us = graph_us(torch, lambda w, cfg=cfg, f=ours: f(w, cfg), ws)
                rows.append((us, cfg))
            except Exception as e:  # noqa: BLE001 — a config that fails to compile or launch is a result too
                log(f"  {name} {cfg}: failed ({type(e).__name__}: {str(e)[:120]})")
        rows.sort(key=lambda r: r[0])
        us_cublas = graph_us(torch, cublas, ws)
        best_us, best = rows[0]
        key = config_key(n_out, K, silu)
        if not best["USE_DOT"]:
            table[key] = best
        report[key] = dict(name=name, weight_gb=gb, cublas_unfused_us=us_cublas,
                           timings=[dict(us=us, gbps=gb / us * 1e6, **cfg) for us, cfg in rows])
        log(f"{name:22s} [{N}x{K}, {gb * 1e3:.1f} MB]: cuBLAS unfused {us_cublas:.1f} us "
            f"({gb / us_cublas * 1e6:.0f} GB/s); best {best_us:.1f} us ({gb / best_us * 1e6:.0f} GB/s) {best}")
        for us, cfg in rows[1:4]:
            log(f"    next: {us:.1f} us ({gb / us * 1e6:.0f} GB/s) {cfg}")
    gpu = torch.cuda.get_device_name()
    with open(out_path, "w") as f:
        json.dump({"source": f"tune_gemv.sweep on {gpu}, M = 1, bf16, µs per call inside a CUDA graph",
                   "configs": table, "measurements": report}, f, indent=1)
    triton_gemv.TUNED.clear()
    triton_gemv.TUNED.update(table)
    return table
