"""Exploration, a lab stage: the Gluon forward's K/V ring depth, settings of its newest schedules
(``--fwd-settings``), or (``--bwd``) settings of the Gluon backward.

At the headline shape, each setting is held to FlashAttention's rule first, then timed with the harness's event
timer. Prints one line per setting; NOT a source of published numbers (those come from the bench's stamped
records).

    python -m gpufolio_projects.flash_attention.lab.gluon_probe [--fwd-settings | --bwd]

Shared memory per CTA is Q (2 × 64 × D) plus STAGES × (K + V) tiles of 128 × D, bf16: at D = 128, 2 stages
take 160 KiB and 3 take 224 KiB of the 227 KiB a CTA may have; at D = 64, 3 stages take 112 KiB and 4 take
144 KiB. The backward keeps K and V of 128 keys and rings Q and dO (64 × D each, with their rows' LSE and Δ):
at D = 128, 2 stages take 193 KiB with its dS and dQ tiles and 3 take 226 KiB; at D = 64, 4 take 146 KiB.
"""
from __future__ import annotations

import argparse
import contextlib
import sys

# (D, ring depths): today's depth first, then one deeper.
DEPTHS = ((128, (2, 3)), (64, (3, 4)))
# ((D, causal), settings): each setting overrides entries of the backward's tables (STAGES by head dim, DQ_FIRST
# by head dim and causal; {} is the kernel as committed), in the kernel as committed (None) or in one of
# variants.BWD_VARIANTS. The committed kernel is timed first and last, so the spread between its two times shows
# how far a variant's difference stands out from drift.
BWD_SETTINGS = tuple(((D, causal), (({}, None), ({}, "dQ writer warp, two tiles"), ({}, "dQ reduce under the next Sᵀ"),
                                    ({}, "dQ reduce under the next Sᵀ, unscaled"), ({}, None)))
                     for D in (128, 64) for causal in (False, True))
B_H_S = (4, 16, 4096)
# The softmax-under-P·V and persistent forwards' settings: (tables of gluon_fwd by head dim, each spelled out, as
# the committed table differs by head dim and {} would time the same kernel as one of them; None for the kernel
# as committed or the name of one of variants.FWD_VARIANTS).
FWD_SETTINGS = (({"SHORT_CHAINS": False}, None), ({"SHORT_CHAINS": True}, None),
                ({"SHORT_CHAINS": True}, "short max, shuffled sum"))


def _inputs(count: int, D: int) -> list:
    """``count`` seeded bf16 [B, H, S, D] tensors at the probe's shape."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(1)
    return [torch.randn((*B_H_S, D), device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(count)]


def _fwd_flops(D: int, causal: bool) -> float:
    B, H, S = B_H_S
    return 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)


def _print_row(cells: tuple, ok: bool, call, flops: float) -> None:
    """One table row: the setting's cells, the rule's verdict, then ``call`` timed by the harness's event timer."""
    from gpufolio.timing import time_events

    ms = time_events(call, warmup_ms=50.0, rep_ms=200.0).median_ms
    print(" | ".join([*map(str, cells), "pass" if ok else "FAIL", f"{ms:.4f}", f"{flops / ms / 1e9:.1f}"]),
          flush=True)


def _label(setting: dict, variant: str | None = None) -> str:
    """A setting as its table entries and variant, 'STAGES=3 DQ_FIRST=True'; {} is the kernel as committed."""
    tables = " ".join(f"{name}={value}" for name, value in setting.items()) or "as committed"
    return tables + (f" {variant}" if variant else "")


@contextlib.contextmanager
def _overridden(module, key: tuple, setting: dict):
    """A kernel module's tables (by head dim, like ``STAGES``, or by (head dim, causal), like ``DQ_FIRST``) set to
    ``setting``'s values at ``key`` = (head dim, causal), or at its head dim where a table is keyed by head dim
    alone, meanwhile; put back afterwards."""
    saved = {name: dict(getattr(module, name)) for name in setting}
    try:
        for name, value in setting.items():
            table = getattr(module, name)
            table[key if key in table else key[0]] = value
        yield
    finally:
        for name, table in saved.items():
            getattr(module, name).update(table)


def probe_forward() -> int:
    """The forward's K/V ring at today's depth and one deeper, ping-pong with and without the overlap."""
    from ..kernels import gluon_fwd
    from .gluon_check import check_case

    print("D | causal | overlap | stages | rule | median ms | TFLOP/s", flush=True)
    for D, depths in DEPTHS:
        for stages in depths:
            with _overridden(gluon_fwd, (D, ), {"STAGES": stages}):
                for causal in (False, True):
                    for overlap in (False, True):
                        ok = check_case(*B_H_S, D, causal, pingpong=True, overlap=overlap)
                        q, k, v = _inputs(3, D)

                        def call(q=q, k=k, v=v, causal=causal, overlap=overlap):
                            return gluon_fwd.gluon_attention_fwd(q, k, v, causal=causal, overlap=overlap)

                        _print_row((D, causal, overlap, stages), ok, call, _fwd_flops(D, causal))
    return 0


def probe_forward_settings() -> int:
    """The softmax-under-P·V and persistent forwards in each of ``FWD_SETTINGS``, checked at the headline shape
    and a ragged one, then timed."""
    from .gluon_check import check_case
    from .variants import forward

    print("D | causal | schedule | setting | rule | median ms | TFLOP/s", flush=True)
    for D in (128, 64):
        for causal in (False, True):
            for persistent in (False, True):
                for setting, variant in FWD_SETTINGS:
                    with _overridden(forward(variant), (D, causal), setting):  # a variant has tables of its own
                        flags = dict(pingpong=True, overlap=True, lean=True, under_pv=True, persistent=persistent)
                        ok = (check_case(*B_H_S, D, causal, **flags, variant=variant)
                              and check_case(2, 4, 777, D, causal, **flags, variant=variant))
                        q, k, v = _inputs(3, D)

                        def call(q=q, k=k, v=v, causal=causal, flags=flags, fwd=forward(variant)):
                            return fwd.gluon_attention_fwd(q, k, v, causal=causal, **flags)

                        schedule = "persistent" if persistent else "under_pv"
                        _print_row((D, causal, schedule, _label(setting, variant)), ok, call, _fwd_flops(D, causal))
    return 0


def probe_backward() -> int:
    """The backward's settings of ``BWD_SETTINGS``, each checked at the headline shape and a ragged one, then the
    backward alone (Δ, the kernel, dQ's conversion) timed on one forward's O and LSE."""
    from ..kernels.gluon_fwd import gluon_attention_fwd
    from .gluon_bwd_check import check_case
    from .variants import backward

    print("D | causal | setting | rule | median ms | backward TFLOP/s (2.5x the forward's FLOPs)", flush=True)
    for (D, causal), settings in BWD_SETTINGS:
        for setting, variant in settings:
            with _overridden(backward(variant), (D, causal), setting):
                ok = (check_case(*B_H_S, D, causal, variant=variant)
                      and check_case(1, 2, 777, D, causal, variant=variant))
                q, k, v, do = _inputs(4, D)
                o, lse = gluon_attention_fwd(q, k, v, causal=causal, overlap=True, lean=True, under_pv=True)

                def call(q=q, k=k, v=v, do=do, o=o, lse=lse, causal=causal, bwd=backward(variant)):
                    return bwd.gluon_attention_bwd(do, q, k, v, o, lse, causal=causal)

                _print_row((D, causal, _label(setting, variant)), ok, call, 2.5 * _fwd_flops(D, causal))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--bwd", action="store_true",
                       help="the backward's settings (BWD_SETTINGS) instead of the forward's K/V ring")
    which.add_argument("--fwd-settings", action="store_true",
                       help="the softmax-under-P·V and persistent forwards' settings (FWD_SETTINGS)")
    a = ap.parse_args()
    if a.fwd_settings:
        return probe_forward_settings()
    return probe_backward() if a.bwd else probe_forward()


if __name__ == "__main__":
    sys.exit(main())
