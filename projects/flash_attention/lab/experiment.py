"""Times forward configs outside the bench, each checked against the first, for configs too risky for the bench
(experimental compiler features that may fail to compile, miscompile or hang). Prints as it goes, so a hang
under `timeout` still leaves the earlier lines. Its timings are for choosing configs, never for a writeup.

    python -m gpufolio_projects.flash_attention.lab.experiment 128,128,8,3 128,128,4,2,ws [--causal]
"""
from __future__ import annotations

import argparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+", help="block_m,block_n,num_warps,num_stages[,ws]; the first is the reference")
    ap.add_argument("--S", type=int, default=4096)
    ap.add_argument("--D", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    a = ap.parse_args()

    import torch
    import triton.testing

    from ..kernels.launch import attn_fwd
    from ..kernels.tuning import KernelConfig

    shape = (16384 // a.S, 16, a.S, a.D)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    scale = a.D ** -0.5
    flops = 4.0 * shape[0] * shape[1] * a.S * a.S * a.D * (0.5 if a.causal else 1.0)
    ref = None
    for text in a.configs:
        cfg = KernelConfig.parse(text)
        try:
            o, _ = attn_fwd(q, k, v, a.causal, scale, config=cfg)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"{cfg}: does not run: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            continue
        err = 0.0 if ref is None else float((o.float() - ref).abs().max())
        ref = o.float() if ref is None else ref
        ms = triton.testing.do_bench(lambda cfg=cfg: attn_fwd(q, k, v, a.causal, scale, config=cfg), warmup=10,
                                     rep=100)
        print(f"{cfg} causal={a.causal}: {ms * 1e3:.0f} us, {flops / ms / 1e9:.0f} TFLOP/s, "
              f"max |o - o_ref| = {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
