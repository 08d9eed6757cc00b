"""Exploration, a lab stage: the Gluon forward's K/V ring depth (``--bwd``: the Gluon backward's Q/dO ring depth)
at the headline shape, each setting held to FlashAttention's rule first, then timed with the harness's event
timer. Prints one line per setting; NOT a source of published numbers (those come from the bench's stamped
records).

    python -m gpufolio_projects.flash_attention.lab.gluon_probe [--bwd]

Shared memory per CTA is Q (2 × 64 × D) plus STAGES × (K + V) tiles of 128 × D, bf16: at D = 128, 2 stages
take 160 KiB and 3 take 224 KiB of the 227 KiB a CTA may have; at D = 64, 3 stages take 112 KiB and 4 take
144 KiB. The backward keeps K and V of 128 keys and rings Q and dO (64 × D each, with their rows' LSE and Δ):
at D = 128, 2 stages take 198 KiB with its dS and dQ tiles and 3 take 231 KiB; at D = 64, 4 take 150 KiB.
"""
from __future__ import annotations

import argparse
import sys

# (D, ring depths): today's depth first, then one deeper.
DEPTHS = ((128, (2, 3)), (64, (3, 4)))
BWD_DEPTHS = ((128, (2, 3)), (64, (4, 5)))
B_H_S = (4, 16, 4096)


def probe_backward() -> int:
    """The backward's Q/dO ring, 2 against 3 stages at D = 128 (4 against 5 at D = 64): each setting checked,
    then the backward alone (Δ, the kernel, dQ's conversion) timed on one forward's O and LSE."""
    import torch
    from gpufolio.timing import time_events

    from ..kernels import gluon_bwd
    from ..kernels.gluon_fwd import gluon_attention_fwd
    from .gluon_bwd_check import check_case

    B, H, S = B_H_S
    default = dict(gluon_bwd.STAGES)
    print("D | causal | stages | rule | median ms | backward TFLOP/s (2.5x the forward's FLOPs)", flush=True)
    try:
        for D, depths in BWD_DEPTHS:
            for stages in depths:
                gluon_bwd.STAGES[D] = stages
                for causal in (False, True):
                    ok = check_case(B, H, S, D, causal)
                    gen = torch.Generator(device="cuda").manual_seed(1)
                    q, k, v, do = (torch.randn((B, H, S, D), device="cuda", dtype=torch.bfloat16, generator=gen)
                                   for _ in range(4))
                    o, lse = gluon_attention_fwd(q, k, v, causal=causal, overlap=True, lean=True, under_pv=True)

                    def call(q=q, k=k, v=v, do=do, o=o, lse=lse, causal=causal):
                        return gluon_bwd.gluon_attention_bwd(do, q, k, v, o, lse, causal=causal)

                    ms = time_events(call, warmup_ms=50.0, rep_ms=200.0).median_ms
                    flops = 2.5 * 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
                    print(f"{D} | {causal} | {stages} | {'pass' if ok else 'FAIL'} | {ms:.4f} | "
                          f"{flops / ms / 1e9:.1f}", flush=True)
    finally:
        gluon_bwd.STAGES.update(default)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bwd", action="store_true", help="the backward's Q/dO ring instead of the forward's K/V ring")
    if ap.parse_args().bwd:
        return probe_backward()
    import torch
    from gpufolio.timing import time_events

    from ..kernels import gluon_fwd
    from .gluon_check import check_case

    B, H, S = B_H_S
    default = dict(gluon_fwd.STAGES)
    print("D | causal | overlap | stages | rule | median ms | TFLOP/s", flush=True)
    try:
        for D, depths in DEPTHS:
            for stages in depths:
                gluon_fwd.STAGES[D] = stages
                for causal in (False, True):
                    for overlap in (False, True):
                        ok = check_case(B, H, S, D, causal, pingpong=True, overlap=overlap)
                        gen = torch.Generator(device="cuda").manual_seed(1)
                        q, k, v = (torch.randn((B, H, S, D), device="cuda", dtype=torch.bfloat16, generator=gen)
                                   for _ in range(3))
                        def call(q=q, k=k, v=v, causal=causal, overlap=overlap):
                            return gluon_fwd.gluon_attention_fwd(q, k, v, causal=causal, overlap=overlap)

                        ms = time_events(call, warmup_ms=50.0, rep_ms=200.0).median_ms
                        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
                        print(f"{D} | {causal} | {overlap} | {stages} | {'pass' if ok else 'FAIL'} | {ms:.4f} | "
                              f"{flops / ms / 1e9:.1f}", flush=True)
    finally:
        gluon_fwd.STAGES.update(default)
    return 0


if __name__ == "__main__":
    sys.exit(main())
