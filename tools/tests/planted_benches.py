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

    return Case(fn=_make_fn(variant), make_inputs=make_inputs, reference=lambda inp: inp["x"].double() * 2,
                tolerance=Tolerance(1e-6, 1e-6), outputs_in_inputs=("out",), work=Work(bytes=8.0 * n))


VARIANTS = ["good", "writes_nothing", "skips_tail", "writes_zeros", "returns_nan", "cached", "first_call_only",
            "aborts", "hangs", "oom", "raises", "unsupported"]

BENCHES = [
    Bench(
        project="fused_kernels", name="planted", metric=GBPS,
        variants=[Variant("baseline", "baseline"), *[Variant(v) for v in VARIANTS]],
        configs=lambda mode: [{"n": N, "dtype": "float32"}],
        case=_case, headline_params={"n": N}, x_param="n",
    )
]
