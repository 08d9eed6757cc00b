"""Benches with planted faults, for the harness's own tests (selected with GPUFOLIO_BENCH_MODULES).

Each variant computes out = 2·x, or fails to in one particular way the correctness gate or the isolation
must catch.
"""
from __future__ import annotations

import os
import time

from gpufolio.api import GBPS, Bench, Case, Tolerance, Unsupported, Variant, Work

N = 4099  # odd on purpose: a kernel that forgets the tail leaves NaN poison behind


def _make_fn(variant: str):
    import torch

    state = {"calls": 0, "cache": None}

    def fn(inp):
        x, out = inp["x"], inp["out"]
        state["calls"] += 1
        if variant in ("good", "baseline"):
            torch.mul(x, 2, out=out)
        elif variant == "writes_nothing":
            pass
        elif variant == "skips_tail":
            torch.mul(x[:-3], 2, out=out[:-3])
        elif variant == "writes_zeros":
            out.zero_()
        elif variant == "returns_nan":
            out.fill_(float("nan"))
        elif variant == "cached":
            if state["cache"] is None:
                state["cache"] = x * 2
            out.copy_(state["cache"])
        elif variant == "clobbers_inputs":  # zeros into the input and the output: 0 = 2·0 after the fact
            x.zero_()
            out.zero_()
        elif variant == "replays":  # a result stored on the input tensor: honest on every fresh tensor
            stored = getattr(x, "_planted_result", None)
            if stored is not None:
                out.copy_(stored)
            else:
                torch.mul(x, 2, out=out)
                x._planted_result = out.clone()
        elif variant == "declared_state":  # writes its input, and says so (mutable_inputs)
            torch.mul(x, 2, out=out)
            x.mul_(0.5)
        elif variant in ("nan_extra_metric", "bad_work"):
            torch.mul(x, 2, out=out)
        elif variant == "first_call_only":
            torch.mul(x, 2 if state["calls"] == 1 else 3, out=out)
        elif variant == "aborts":
            os.abort()
        elif variant == "hangs":
            time.sleep(3600)
        elif variant == "oom":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB (planted)")
        elif variant == "raises":
            raise RuntimeError("planted launch failure")
        return out

    return fn


def _case(variant: str, params: dict, device) -> Case:
    import torch

    if variant == "unsupported":
        raise Unsupported("planted: this variant refuses n=4099")
    n = params["n"]

    def make_inputs(gen):
        return {"x": torch.randn(n, generator=gen, device=device), "out": torch.empty(n, device=device)}

    extra = (lambda median_s: {"planted": (float("nan"), "x", True)}) if variant == "nan_extra_metric" else None
    work = Work(bytes=8.0 * n, flops="lots" if variant == "bad_work" else None)  # the schema rejects a string
    return Case(fn=_make_fn(variant), make_inputs=make_inputs, reference=lambda inp: inp["x"].double() * 2,
                tolerance=Tolerance(1e-6, 1e-6), outputs_in_inputs=("out",), work=work, extra_metrics=extra,
                mutable_inputs=("x",) if variant == "declared_state" else ())


VARIANTS = ["good", "writes_nothing", "skips_tail", "writes_zeros", "returns_nan", "cached", "first_call_only",
            "clobbers_inputs", "replays", "declared_state", "nan_extra_metric", "bad_work",
            "aborts", "hangs", "oom", "raises", "unsupported"]

BENCHES = [
    Bench(
        project="fused_kernels", name="planted", metric=GBPS,
        variants=[Variant("baseline", "baseline"), *[Variant(v) for v in VARIANTS]],
        configs=lambda mode: [{"n": N, "dtype": "float32"}],
        case=_case, headline_params={"n": N}, x_param="n",
    )
]
