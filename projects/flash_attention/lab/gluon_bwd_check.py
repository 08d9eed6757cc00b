"""Holds the Gluon backward (``gluon_bwd``) to FlashAttention's rule on the headline shape and awkward ones.

The rule is the bench's check, per gradient: error of dq, dk and dv against the fp32 reference gradients (autograd
through ``reference_attention`` on upcast inputs) at most 2× PyTorch's same-dtype error (the same autograd in
bf16) plus the bench's slack. O and LSE come from the Gluon forward (softmax under P·V, the schedule the bench
leads with; ``--triton-fwd``: from the Triton forward, whose LSE is [B·H, S], reshaped), dO is random. Cases: the
headline shape, a ragged S (not a multiple of either tile), D = 64, each full and causal. Also checked per case:
no NaN or Inf in the gradients, and the call leaves its inputs (do, q, k, v, o, lse) unchanged. Prints
PASS/FAIL per case and gradient as it goes, so a hang under ``timeout`` still leaves the earlier lines; exits 1
if any check fails.

    timeout 900 python -m gpufolio_projects.flash_attention.lab.gluon_bwd_check [--quick] [--triton-fwd]

It times nothing: timing belongs to the harness, which takes the kernel once it is a backend.
Needs a Hopper GPU and triton 3.6, the Gluon API the kernel is written against.
"""
from __future__ import annotations

import argparse
import sys

from .gluon_check import CASES  # the forward's: the headline shape, ragged S, D = 64, each full and causal


def _forward(q, k, v, causal: bool, triton_fwd: bool):
    """(O, LSE [B, H, S] fp32 in log2 units) from the Gluon forward or the Triton one."""
    if triton_fwd:
        from ..kernels.launch import attn_fwd

        B, H, S, D = q.shape
        o, lse = attn_fwd(q, k, v, causal, D ** -0.5)
        return o, lse.view(B, H, S)
    from ..kernels.gluon_fwd import gluon_attention_fwd

    return gluon_attention_fwd(q, k, v, causal=causal, overlap=True, lean=True, under_pv=True)


def check_case(B: int, H: int, S: int, D: int, causal: bool, triton_fwd: bool = False,
               variant: str | None = None) -> bool:
    """One case held to the rule: the backward as committed, or ``variant`` (a name in
    ``variants.BWD_VARIANTS``)."""
    import torch
    from gpufolio.api import FlashRule
    from gpufolio.check import compare_flash_rule

    from ..bench import SLACK
    from ..reference import reference_attention
    from .variants import backward

    label = f"B,H,S,D={B},{H},{S},{D} causal={causal}" + (f" variant={variant!r}" if variant else "")
    gen = torch.Generator(device="cuda").manual_seed(S * D + causal)
    q, k, v, do = (torch.randn((B, H, S, D), device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(4))
    o, lse = _forward(q, k, v, causal, triton_fwd)
    inputs = {"do": do, "q": q, "k": k, "v": v, "o": o, "lse": lse}
    before = {name: t.clone() for name, t in inputs.items()}
    dq, dk, dv = backward(variant).gluon_attention_bwd(do, q, k, v, o, lse, causal=causal)
    torch.cuda.synchronize()

    ok = True
    changed = [name for name, t in inputs.items() if not torch.equal(t, before[name])]
    print(f"{'FAIL' if changed else 'PASS'} {label} inputs unchanged"
          + (f": changed {', '.join(changed)}" if changed else ""), flush=True)
    ok &= not changed

    _, *ref = reference_attention(q, k, v, causal, do=do)
    _, *lowp = reference_attention(q, k, v, causal, do=do, compute_dtype=q.dtype)
    rule = FlashRule(factor=2.0, slack=SLACK["bfloat16"])
    for name, got, r, lo in zip(("dq", "dk", "dv"), (dq, dk, dv), ref, lowp):
        bad = int((~torch.isfinite(got)).sum())
        result = compare_flash_rule(got, r, lo, rule)
        checks = result["checks"]
        passed = bool(checks) and all(c["passed"] for c in checks) and bad == 0
        if checks:
            c = checks[0]
            err = "inf" if c["max_abs_err"] is None else f"{c['max_abs_err']:.3e}"
            detail = (f"max err {err} vs bound {c['bound']:.3e} (same-dtype err {c['lowp_max_abs_err']:.3e}), "
                      f"{bad} non-finite")
        else:
            detail = str(result["detail"])
        print(f"{'PASS' if passed else 'FAIL'} {label} {name}: {detail}", flush=True)
        ok &= passed
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the headline shape and the ragged one, full only")
    ap.add_argument("--triton-fwd", action="store_true", help="O and LSE from the Triton forward")
    a = ap.parse_args()
    cases = CASES[:2] if a.quick else CASES
    failed = 0
    for case in cases:
        try:
            failed += not check_case(*case, triton_fwd=a.triton_fwd)
        except Exception as exc:  # noqa: BLE001 - a compile or launch error is this case's FAIL; go on
            print(f"FAIL B,H,S,D,causal={case}: {type(exc).__name__}: {str(exc)[:400]}", flush=True)
            failed += 1
    print(f"{'PASS' if not failed else 'FAIL'}: {len(cases) - failed}/{len(cases)} cases pass", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
