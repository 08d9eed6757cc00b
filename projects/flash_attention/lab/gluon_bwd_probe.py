"""Maps where the Gluon backward (``gluon_bwd``) runs and where it faults: each shape in a process of its own, so a
fault (a sticky CUDA error that poisons every later launch of its process) is one shape's line, not the rest's.

Per shape: PASS or FAIL by ``gluon_bwd_check.check_case`` (dq, dk, dv within FlashAttention's rule of the fp32
reference, finite, inputs unchanged; its failing lines follow), or CRASH (the process died or raised: its last
error line). With ``--sanitize``, the first crashing shape is run again under ``compute-sanitizer`` (memcheck),
whose report names the faulting instruction. Times nothing.

    python -m gpufolio_projects.flash_attention.lab.gluon_bwd_probe [--sanitize]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from .gluon_bwd_check import check_case

# (B, H, S, D, causal): S that is and is not a multiple of 4 (each head's fp32 LSE/Δ rows on a 16-byte boundary or
# not), B·H·S that is and is not a multiple of the 64-row blocks, key blocks whose second half is all past S, both
# head dims.
SHAPES = [(2, 3, 333, 128, False), (1, 1, 333, 128, False), (2, 3, 336, 128, False), (1, 1, 320, 128, False),
          (2, 4, 1000, 128, False), (2, 4, 777, 64, False), (2, 4, 768, 64, False), (1, 1, 4096, 64, False),
          (2, 4, 1000, 128, True), (2, 3, 333, 128, True), (1, 2, 4096, 128, True), (2, 4, 768, 64, True)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", help="B,H,S,D,causal: run one shape here (what each child process does)")
    ap.add_argument("--sanitize", action="store_true", help="rerun the first crashing shape under compute-sanitizer")
    a = ap.parse_args()
    if a.case:
        B, H, S, D, causal = a.case.split(",")
        print("PASS" if check_case(int(B), int(H), int(S), int(D), causal == "True") else "FAIL", flush=True)
        return 0
    crashed = None
    for shape in SHAPES:
        cmd = [sys.executable, "-m", __spec__.name, "--case", ",".join(map(str, shape))]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            out = res.stdout.strip().splitlines()
            if res.returncode or not out:
                line = "CRASH " + ((res.stderr.strip().splitlines() or ["(no output)"])[-1])[:300]
            else:  # check_case's own lines, then its verdict
                line = out[-1] + "".join(f"\n    {f}" for f in out[:-1] if f.startswith("FAIL"))
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
