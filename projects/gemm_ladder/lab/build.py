"""Build one of gemm_ladder's extensions, timed, and say where its .so is (a lab stage; with
GPUFOLIO_BUILD_VERBOSE=1 the log keeps nvcc's ptxas -v lines: registers, spills, stack per kernel).

    python -m gpufolio_projects.gemm_ladder.lab.build sgemm|bf16|sgemm_sweep|bf16_probe
"""
from __future__ import annotations

import sys
import time


def loaders() -> dict:
    from ..bf16 import ops
    from ..sgemm import registry
    from . import bf16_probe, sgemm_sweep

    return {"sgemm": registry.load, "bf16": ops.load, "sgemm_sweep": sgemm_sweep.load, "bf16_probe": bf16_probe.load}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    known = loaders()
    if len(argv) != 1 or argv[0] not in known:
        print(f"usage: python -m gpufolio_projects.gemm_ladder.lab.build {'|'.join(known)}", file=sys.stderr)
        return 2
    t = time.monotonic()
    ext = known[argv[0]]()
    print(f"built {argv[0]}: {ext.__file__} in {time.monotonic() - t:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
