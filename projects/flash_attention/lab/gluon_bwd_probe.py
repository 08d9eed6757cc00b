"""Maps where the Gluon backward (``gluon_bwd``) runs and where it faults: each shape in a process of its own, so a
fault (a sticky CUDA error that poisons every later launch of its process) is one shape's line, not the rest's.

Per shape: PASS (dq, dk, dv within FlashAttention's rule of the fp32 reference, as ``gluon_bwd_check``), FAIL
(finite but outside the rule, or non-finite), or CRASH (the process died or raised: its last error line). With
``--sanitize``, the first crashing shape is run again under ``compute-sanitizer`` (memcheck), whose report names
the faulting instruction. Times nothing.

    python -m gpufolio_projects.flash_attention.lab.gluon_bwd_probe [--sanitize]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

# (B, H, S, D, causal): S that is and is not a multiple of 4 (each head's fp32 LSE/Δ rows on a 16-byte boundary or
# not), B·H·S that is and is not a multiple of the 64-row blocks, key blocks whose second half is all past S, both
# head dims.
SHAPES = [(2, 3, 333, 128, False), (1, 1, 333, 128, False), (2, 3, 336, 128, False), (1, 1, 320, 128, False),
          (2, 4, 1000, 128, False), (2, 4, 777, 64, False), (2, 4, 768, 64, False), (1, 1, 4096, 64, False),
          (2, 4, 1000, 128, True), (2, 3, 333, 128, True), (1, 2, 4096, 128, True), (2, 4, 768, 64, True)]


def run_one(B: int, H: int, S: int, D: int, causal: bool) -> str:
    """One shape in this process: 'PASS ...' or 'FAIL ...' (raises on a fault)."""
    import torch
    from gpufolio.api import FlashRule
    from gpufolio.check import compare_flash_rule

    from ..bench import SLACK
    from ..kernels.gluon_bwd import gluon_attention_bwd
    from ..kernels.gluon_fwd import gluon_attention_fwd
    from ..reference import reference_attention

    gen = torch.Generator(device="cuda").manual_seed(S * D + causal)
    q, k, v, do = (torch.randn((B, H, S, D), device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(4))
    o, lse = gluon_attention_fwd(q, k, v, causal=causal, overlap=True, lean=True, under_pv=True)
    dq, dk, dv = gluon_attention_bwd(do, q, k, v, o, lse, causal=causal)
    torch.cuda.synchronize()
    _, *ref = reference_attention(q, k, v, causal, do=do)
    _, *lowp = reference_attention(q, k, v, causal, do=do, compute_dtype=q.dtype)
    rule = FlashRule(factor=2.0, slack=SLACK["bfloat16"])
    bad = []
    for name, got, r, lo in zip(("dq", "dk", "dv"), (dq, dk, dv), ref, lowp):
        checks = compare_flash_rule(got, r, lo, rule)["checks"]
        if not (checks and all(c["passed"] for c in checks) and bool(torch.isfinite(got).all())):
            err = checks[0]["max_abs_err"] if checks else None
            bad.append(f"{name} (max err {err}, bound {checks[0]['bound'] if checks else None})")
    return ("FAIL " + ", ".join(bad)) if bad else "PASS"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", help="B,H,S,D,causal: run one shape here (what each child process does)")
    ap.add_argument("--sanitize", action="store_true", help="rerun the first crashing shape under compute-sanitizer")
    a = ap.parse_args()
    if a.case:
        B, H, S, D, causal = a.case.split(",")
        print(run_one(int(B), int(H), int(S), int(D), causal == "True"), flush=True)
        return 0
    crashed = None
    for shape in SHAPES:
        cmd = [sys.executable, "-m", __spec__.name, "--case", ",".join(map(str, shape))]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            out = res.stdout.strip().splitlines()
            line = out[-1] if res.returncode == 0 and out else \
                "CRASH " + ((res.stderr.strip().splitlines() or ["(no output)"])[-1])[:300]
        except subprocess.TimeoutExpired:
            line = "CRASH timed out after 120 s (a hang?)"
        crashed = crashed or (cmd if line.startswith("CRASH") else None)
        print(f"B,H,S,D,causal={shape}: {line}", flush=True)
    if a.sanitize and crashed:
        tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
        print(f"$ compute-sanitizer {' '.join(crashed[1:])}", flush=True)
        res = subprocess.run([tool, "--tool", "memcheck", "--show-backtrace", "device", *crashed], capture_output=True,
                             text=True, timeout=300)
        print("\n".join((res.stdout + res.stderr).splitlines()[:80]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
