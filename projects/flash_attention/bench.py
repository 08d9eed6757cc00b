"""Benches ``attention_fwd`` and ``attention_fwd_bwd``: our Triton FlashAttention and our warp-specialised Gluon
forward (Hopper, triton 3.6; its backward is the Triton one) against PyTorch's backends and FlashAttention-4
(``flash-attn-4``, the ``peers`` extra; skipped with the reason where it is not installed).

    python -m gpufolio bench --project flash_attention [--quick | --dry-run]

Shapes: H = 16 heads, batch·seqlen = 16k tokens (B = 16384 / S), S = 512 … 16384, head dim 64 and 128, causal
and full, bfloat16 (dry: tiny fp32/fp16 shapes on CPU through TRITON_INTERPRET=1).

FLOPs (``work.flops``), itemised:
    forward   = 2 matmuls (S = Q·Kᵀ, O = P·V), each 2·B·H·Sq·Sk·D         = 4·B·H·S²·D
    causal    = half of that (the masked upper triangle is skipped; the diagonal blocks' waste is not counted)
    fwd+bwd   = forward × 3.5: the backward counts 5 matmuls (recompute S, dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K,
                dK = dSᵀ·Q), i.e. 2.5× the forward. Softmax exps and rescales are not counted. Our backward
                actually runs 7 matmuls (dQ's kernel recomputes S and dP), which the count does not reward.
Correctness: FlashAttention's rule (harness ``FlashRule``) per output — out (and dq, dk, dv): error against an
fp32 reference on upcast inputs at most 2× the error of PyTorch's same-dtype math (``reference_attention`` in the
input dtype: materialised softmax, as the ``eager`` baseline computes it) plus a small absolute slack. The tests
hold the kernels to the same rule through the same comparison (``gpufolio.check.compare_flash_rule``).
This module imports without torch; torch and the kernels are imported inside ``case``.
"""
from __future__ import annotations

import os

from gpufolio.api import TFLOPS, Bench, Case, FlashRule, Mode, Timing, Unsupported, Variant, Work, peer_missing

PROJECT = "flash_attention"
TOKENS = 16384
HEADS = 16
# The eager baseline materialises B·H·S² scores: refuse above this estimate rather than run out of memory.
EAGER_MAX_BYTES = 24 * 2**30
# Slack of the FlashRule per dtype: absolute, far below each dtype's rounding of O(1) outputs.
SLACK = {"float32": 2e-5, "float16": 1e-4, "bfloat16": 1e-4}
# Attention calls take 0.1–20 ms: 200 ms of reps is ≥ 10 reps at every size and keeps the full sweep short.
TIMING = Timing(warmup_ms=50.0, rep_ms=200.0)

def fa4_missing() -> str | None:
    """``Variant.available`` for FlashAttention-4 (the ``peers`` extra): its CuTe DSL kernels need sm_90+."""
    return peer_missing("flash_attn.cute", "flash-attn-4")


def gluon_missing() -> str | None:
    """``Variant.available`` for the Gluon forward: it is written against one triton release's Gluon API."""
    from .kernels.gluon_fwd import unavailable

    return unavailable()


# The Gluon forward's schedules: variant -> flash_attention's backend.
GLUON_BACKENDS = {"gluon_fa": "gluon", "gluon_fa_overlap": "gluon_overlap", "gluon_fa_lean": "gluon_lean",
                  "gluon_fa_under_pv": "gluon_under_pv", "gluon_fa_persistent": "gluon_persistent",
                  "gluon_fa_bwd": "gluon_bwd"}
GLUON_LABELS = {"gluon_fa": "Gluon FlashAttention, warp-specialised, ping-pong (ours)",
                "gluon_fa_overlap": "Gluon FlashAttention, ping-pong + intra-warpgroup overlap (ours)",
                "gluon_fa_lean": "Gluon FlashAttention, overlap + per-thread mbarrier arrives (ours)",
                "gluon_fa_under_pv": "Gluon FlashAttention, lean + softmax under P·V (ours)",
                "gluon_fa_persistent": "Gluon FlashAttention, softmax under P·V, persistent (ours)",
                "gluon_fa_bwd": "Gluon FlashAttention, persistent forward, warp-specialised Gluon backward (ours)"}
GLUON_BACKWARD_VARIANTS = ("gluon_fa_bwd", )  # gluon_fa_persistent's forward: forward+backward only


def _gluon_variants(backward: bool) -> list[Variant]:
    tail = ", Triton backward" if backward else ""
    return [Variant(name, "candidate", label if name in GLUON_BACKWARD_VARIANTS else
                    label.replace(" (ours)", f"{tail} (ours)"), available=gluon_missing)
            for name, label in GLUON_LABELS.items() if backward or name not in GLUON_BACKWARD_VARIANTS]


VARIANTS = [
    Variant("triton_fa", "candidate", "Triton FlashAttention (ours)"),
    Variant("sdpa_flash", "baseline", "SDPA FlashAttention-2 backend"),
    Variant("sdpa_cudnn", "baseline", "SDPA cuDNN backend"),
    Variant("sdpa_efficient", "baseline", "SDPA memory-efficient backend"),
    Variant("eager", "baseline", "eager (materialised softmax)"),
    Variant("flex", "baseline", "FlexAttention (torch.compile)"),
    Variant("fa4", "baseline", "FlashAttention-4 (flash-attn-4, CuTe DSL)", available=fa4_missing),
]
# The backward's other dQ strategy (kernels/bwd.py); its forward is triton_fa's, so it runs in fwd+bwd only.
ATOMIC_VARIANT = Variant("triton_fa_atomic_dq", "candidate", "Triton FlashAttention (ours), dQ by fp32 atomics")
SDPA_BACKENDS = {"sdpa_flash": "FLASH_ATTENTION", "sdpa_cudnn": "CUDNN_ATTENTION",
                 "sdpa_efficient": "EFFICIENT_ATTENTION"}


def _params(S: int, D: int, causal: bool, dtype: str = "bfloat16", B: int | None = None, H: int = HEADS) -> dict:
    return {"B": B if B is not None else TOKENS // S, "H": H, "S": S, "D": D, "causal": causal, "dtype": dtype}


def configs(mode: Mode) -> list[dict]:
    if mode == "dry":
        return [_params(40, 32, False, "float32", B=1, H=2), _params(40, 32, True, "float32", B=1, H=2),
                _params(24, 64, True, "float16", B=2, H=2)]
    if mode == "quick":  # the headline shape, full and causal
        return [_params(4096, 128, causal) for causal in (False, True)]
    lengths = {128: (512, 1024, 2048, 4096, 8192, 16384), 64: (1024, 4096, 16384)}
    return [_params(S, D, causal) for D in (128, 64) for causal in (False, True) for S in lengths[D]]


def flops(p: dict, backward: bool) -> float:
    fwd = 4.0 * p["B"] * p["H"] * p["S"] * p["S"] * p["D"]  # 2 matmuls × 2·B·H·S·S·D
    if p["causal"]:
        fwd *= 0.5
    return fwd * (3.5 if backward else 1.0)


def _attention_fn(variant: str, p: dict, device, backward: bool):
    """The callable (q, k, v) -> out for `variant`; raises Unsupported where it cannot run."""
    import torch
    import torch.nn.functional as F

    causal = p["causal"]
    if variant in ("triton_fa", "triton_fa_atomic_dq"):
        from .attention import flash_attention
        from .kernels.tuning import interpreting

        if device.type != "cuda" and not interpreting():
            raise Unsupported("the Triton kernels need CUDA (or TRITON_INTERPRET=1 on CPU)")
        atomic = variant == "triton_fa_atomic_dq"
        if atomic and not backward:
            raise Unsupported("same forward as triton_fa (the variants differ in the backward only)")
        return lambda q, k, v: flash_attention(q, k, v, causal=causal, atomic_dq=atomic)
    if variant in GLUON_BACKENDS:
        import torch

        if variant in GLUON_BACKWARD_VARIANTS and not backward:
            raise Unsupported("same forward as gluon_fa_persistent (the variants differ in the backward only)")
        if device.type != "cuda" or torch.cuda.get_device_capability(device) != (9, 0):
            raise Unsupported("the Gluon forward needs a Hopper GPU (sm_90a: wgmma, TMA, setmaxnreg)")
        from .attention import flash_attention

        backend = GLUON_BACKENDS[variant]
        return lambda q, k, v: flash_attention(q, k, v, causal=causal, backend=backend)
    if variant in SDPA_BACKENDS:
        if device.type != "cuda":
            raise Unsupported(f"{variant} needs CUDA")
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, SDPA_BACKENDS[variant])

        def sdpa(q, k, v):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return sdpa
    if variant == "eager":
        elem = torch.empty((), dtype=getattr(torch, p["dtype"])).element_size()
        scores = p["B"] * p["H"] * p["S"] * p["S"] * elem
        need = scores * (6 if backward else 3)  # S, softmax(S), and their grads (estimate)
        if need > EAGER_MAX_BYTES:
            raise Unsupported(f"eager would materialise ~{need / 2**30:.0f} GiB of scores (limit "
                              f"{EAGER_MAX_BYTES / 2**30:.0f} GiB)")

        dtype = getattr(torch, p["dtype"])
        return lambda q, k, v: _eager(q, k, v, causal, dtype)
    if variant == "fa4":
        if device.type != "cuda":
            raise Unsupported("fa4 needs CUDA")
        from flash_attn.cute import flash_attn_func

        # FA4 takes [B, S, H, D]: the transposes are views (the last dimension stays contiguous, which is all
        # its layout check asks), so no copy is timed. It returns (out, lse); GQA would pass k, v with fewer
        # heads as they are (this bench's shapes have H = Hkv).
        def fa4(q, k, v):
            out, _ = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal)
            return out.transpose(1, 2)
        return fa4
    if variant == "flex":
        if device.type != "cuda":
            raise Unsupported("flex (compiled FlexAttention) is benched on CUDA only")
        if os.environ.get("GPUFOLIO_FA_NO_FLEX"):  # a short GPU round that cannot afford its compiles
            raise Unsupported("flex skipped in this run (GPUFOLIO_FA_NO_FLEX: no time for its compiles)")
        lengths = os.environ.get("GPUFOLIO_FA_FLEX_S")  # e.g. "1024 4096 16384": one compile per shape costs
        if lengths and str(p["S"]) not in lengths.split():
            raise Unsupported(f"flex compiled only at S in {lengths.split()} in this run (compile time)")
        return _compiled_flex(p, device, backward)
    raise KeyError(f"{PROJECT}: unknown variant {variant!r}")


def _eager(q, k, v, causal: bool, dtype):
    """Materialised softmax in the input dtype, autograd-friendly: the eager baseline."""
    import math

    import torch

    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        from .reference import causal_mask

        s = s.masked_fill(~causal_mask(q.shape[2], k.shape[2], q.device), float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1).to(dtype), v)


def _compiled_flex(p: dict, device, backward: bool):
    """Compiles FlexAttention for this shape once (here, outside the timed loop) and returns the callable."""
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    block_mask = None
    if p["causal"]:
        block_mask = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, None, None, p["S"], p["S"],
                                       device=device)
    # Fresh per case: dynamo caches per code object and, past its recompile limit (8 shapes in one worker),
    # silently runs flex_attention eagerly — a full sweep measured that fallback before this reset.
    torch._dynamo.reset()
    compiled = torch.compile(flex_attention, dynamic=False)

    def flex(q, k, v):
        return compiled(q, k, v, block_mask=block_mask)

    dtype = getattr(torch, p["dtype"])
    shape = (p["B"], p["H"], p["S"], p["D"])
    warm = [torch.randn(shape, device=device, dtype=dtype, requires_grad=backward) for _ in range(3)]
    out = flex(*warm)
    if backward:
        out.backward(torch.randn_like(out))
    torch.cuda.synchronize()
    return flex


def _make_inputs(p: dict, device, backward: bool):
    import torch

    dtype = getattr(torch, p["dtype"])
    shape = (p["B"], p["H"], p["S"], p["D"])

    def make(gen) -> dict:
        def randn():
            return torch.randn(shape, generator=gen, device=gen.device, dtype=torch.float32).to(device, dtype)

        inputs = {"q": randn(), "k": randn(), "v": randn()}
        if backward:
            for name in ("q", "k", "v"):
                inputs[name].requires_grad_(True)
            inputs["do"] = randn()  # a fixed random upstream gradient dO
        return inputs

    return make


def _case(bench: str, variant: str, p: dict, device) -> Case:
    backward = bench == "attention_fwd_bwd"
    attn = _attention_fn(variant, p, device, backward)
    causal, dtype_name = p["causal"], p["dtype"]

    from .reference import reference_attention

    if backward:
        import torch

        def fn(inp):
            out = attn(inp["q"], inp["k"], inp["v"])
            dq, dk, dv = torch.autograd.grad(out, (inp["q"], inp["k"], inp["v"]), inp["do"])
            return out.detach(), dq, dk, dv

        def reference(inp):
            return reference_attention(inp["q"], inp["k"], inp["v"], causal, do=inp["do"])

        def lowp(inp):  # the tests' same-dtype reference too (tests/helpers.check_flash_rule)
            return reference_attention(inp["q"], inp["k"], inp["v"], causal, do=inp["do"],
                                       compute_dtype=inp["q"].dtype)
    else:
        def fn(inp):
            return attn(inp["q"], inp["k"], inp["v"])

        def reference(inp):
            return reference_attention(inp["q"], inp["k"], inp["v"], causal)

        def lowp(inp):
            return reference_attention(inp["q"], inp["k"], inp["v"], causal, compute_dtype=inp["q"].dtype)

    return Case(fn=fn, make_inputs=_make_inputs(p, device, backward), work=Work(flops=flops(p, backward)),
                reference=reference, lowp_reference=lowp,
                tolerance=FlashRule(factor=2.0, slack=SLACK[dtype_name]), timing=TIMING,
                reference_name="fp32 (upcast inputs, materialised softmax)")


def _bench(name: str, description: str, variants: list[Variant]) -> Bench:
    return Bench(
        project=PROJECT, name=name, metric=TFLOPS, variants=variants, configs=configs,
        case=lambda variant, params, device: _case(name, variant, params, device),
        description=description,
        headline_params={"B": 4, "H": HEADS, "S": 4096, "D": 128, "causal": False, "dtype": "bfloat16"},
        headline_baseline=STRONGEST[name], x_param="S")


# The headline baseline of each bench: the strongest one measured on our H200 at the headline shape —
# FlashAttention-4, forward and forward+backward, full and causal (README, "Against FlashAttention-4").
STRONGEST = {"attention_fwd": "fa4", "attention_fwd_bwd": "fa4"}

BENCHES = [
    _bench("attention_fwd", "Attention forward, H=16, batch·seqlen=16k, bf16; FLOPs 4·B·H·S²·D (halved if causal).",
           VARIANTS[:1] + _gluon_variants(backward=False) + VARIANTS[1:]),
    _bench("attention_fwd_bwd", "Attention forward+backward, H=16, batch·seqlen=16k, bf16; FLOPs 3.5× the "
                                "forward's (backward counted as 2.5× forward: 5 matmuls).",
           VARIANTS[:1] + [ATOMIC_VARIANT] + _gluon_variants(backward=True) + VARIANTS[1:]),
]
