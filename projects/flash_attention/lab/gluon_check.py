"""Holds the Gluon forward (``gluon_fwd``) to FlashAttention's rule on the headline shape and awkward ones.

The rule is the bench's check: error against the fp32 reference at most 2× PyTorch's same-dtype error plus
the bench's slack. Cases: the headline shape, a ragged S (not a multiple of either tile), D = 64, causal,
each with ping-pong on and off and the intra-warpgroup overlap off and on, then the lean synchronisation
(per-thread mbarrier arrives, the scale in the exponent's FMA) with each of those but ping-pong and overlap
both off, then the softmax under P·V (lean, overlap and ping-pong on), then it persistent. Prints PASS/FAIL per
case as it goes, so a hang under ``timeout`` still leaves the earlier lines; exits 1 if any case fails.

    timeout 600 python -m gpufolio_projects.flash_attention.lab.gluon_check [--quick | --lean | --under-pv]

It times nothing: timing belongs to the harness (a bench variant is the next step once this passes).
Needs a Hopper GPU and triton 3.6, the Gluon API the kernel is written against.
"""
from __future__ import annotations

import argparse
import sys

# (B, H, S, D, causal): the headline shape first, then a ragged S, D = 64, and causal at each.
CASES = [
    (4, 16, 4096, 128, False),
    (2, 4, 1000, 128, False),
    (2, 4, 777, 64, False),
    (4, 16, 4096, 128, True),
    (2, 4, 1000, 128, True),
    (2, 4, 777, 64, True),
]


def check_case(B: int, H: int, S: int, D: int, causal: bool, pingpong: bool, overlap: bool,
               lean: bool = False, under_pv: bool = False, persistent: bool = False,
               variant: str | None = None) -> bool:
    """One case held to the rule: the kernel as committed, or ``variant`` (a name in ``variants.FWD_VARIANTS``)."""
    import torch
    from gpufolio.api import FlashRule
    from gpufolio.check import compare_flash_rule

    from ..bench import SLACK
    from ..reference import reference_attention
    from .variants import forward

    gen = torch.Generator(device="cuda").manual_seed(S * D + causal)
    q, k, v = (torch.randn((B, H, S, D), device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    out, _ = forward(variant).gluon_attention_fwd(q, k, v, causal=causal, pingpong=pingpong, overlap=overlap, lean=lean,
                                 under_pv=under_pv, persistent=persistent)
    torch.cuda.synchronize()
    ref = reference_attention(q, k, v, causal)
    lowp = reference_attention(q, k, v, causal, compute_dtype=q.dtype)
    result = compare_flash_rule(out, ref, lowp, FlashRule(factor=2.0, slack=SLACK["bfloat16"]))
    checks = result["checks"]
    ok = bool(checks) and all(c["passed"] for c in checks)
    detail = (f"max err {checks[0]['max_abs_err']:.3e} vs bound {checks[0]['bound']:.3e} "
              f"(same-dtype err {checks[0]['lowp_max_abs_err']:.3e})" if checks else str(result["detail"]))
    print(f"{'PASS' if ok else 'FAIL'} B,H,S,D={B},{H},{S},{D} causal={causal} pingpong={pingpong} "
          f"overlap={overlap}{' lean=True' if lean else ''}{' under_pv=True' if under_pv else ''}"
          f"{' persistent=True' if persistent else ''}{f' variant={variant!r}' if variant else ''}: {detail}",
          flush=True)
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the headline shape and the ragged one, ping-pong on, overlap off")
    ap.add_argument("--lean", action="store_true", help="the lean settings only")
    ap.add_argument("--under-pv", action="store_true", help="the softmax-under-P·V settings only (and persistent)")
    a = ap.parse_args()
    # (pingpong, overlap, lean, under_pv, persistent): the four schedules, lean with the three that hand over
    # turns or overlap, then the softmax under P·V (which needs all three), then it persistent
    settings = [(True, False, False, False, False), (False, False, False, False, False),
                (True, True, False, False, False), (False, True, False, False, False),
                (True, True, True, False, False), (False, True, True, False, False), (True, False, True, False, False),
                (True, True, True, True, False), (True, True, True, True, True)]
    if a.quick:
        settings = [(True, False, False, False, False)]
    elif a.lean:
        settings = [st for st in settings if st[2] and not st[3]]
    elif a.under_pv:
        settings = [st for st in settings if st[3]]
    cases = [(c, *st) for st in settings for c in (CASES[:2] if a.quick else CASES)]
    failed = 0
    for case, pingpong, overlap, lean, under_pv, persistent in cases:
        try:
            failed += not check_case(*case, pingpong=pingpong, overlap=overlap, lean=lean, under_pv=under_pv,
                                     persistent=persistent)
        except Exception as exc:  # noqa: BLE001 - a compile or launch error is this case's FAIL; go on
            print(f"FAIL B,H,S,D,causal={case} pingpong={pingpong} overlap={overlap} lean={lean} "
                  f"under_pv={under_pv} persistent={persistent}: "
                  f"{type(exc).__name__}: {str(exc)[:400]}", flush=True)
            failed += 1
    print(f"{'PASS' if not failed else 'FAIL'}: {len(cases) - failed}/{len(cases)} cases pass", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
