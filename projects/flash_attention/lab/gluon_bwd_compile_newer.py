"""Compiles the Gluon backward under a newer Triton than the one it is written for, to see which warpgroup
barriers that Triton's shared-memory analysis still inserts.

The kernel is written against triton 3.6 (the GPU box's); triton 3.9 renamed three of the Gluon calls it uses
(``thread_barrier`` is ``barrier``, the TMA copies are ``async_load``/``async_store``), which this aliases before
compiling, changing nothing else. Prints ``lab/gluon_bwd_compile``'s report per setting, then, for D = 128 full,
the first consumer's query-block loop as the PTX orders its barriers, mbarrier waits and arrives, wgmma waits,
dQ's stores and its reduce: a ``bar.sync`` between an arrive and the wait on the same barrier is the analysis's.
Compile only, no GPU:

    python -m gpufolio_projects.flash_attention.lab.gluon_bwd_compile_newer   # in a venv with triton >= 3.9
"""
from __future__ import annotations

import itertools
import sys

EVENTS = ("bar.sync", "mbarrier.try_wait", "mbarrier.arrive", "cp.async.mbarrier.arrive", "wgmma.wait_group",
          "cp.async.bulk.wait_group", "stmatrix", "st.shared", "cp.reduce.async.bulk", "$L__BB")


def _alias_renamed_calls() -> None:
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import tma

    gl.thread_barrier = gl.barrier
    tma.async_copy_global_to_shared = tma.async_load
    tma.async_copy_shared_to_global = tma.async_store


def main() -> int:
    import triton

    from .gluon_bwd_compile import BWD_METRICS, BWD_PATTERNS, compile_for_hopper, describe_query_block_loops
    from .gluon_compile import compile_report

    print(f"triton {triton.__version__}", flush=True)
    _alias_renamed_calls()
    failed = 0
    for head_dim, causal in itertools.product((128, 64), (False, True)):
        bad, text = compile_report(compile_for_hopper(head_dim, causal), BWD_PATTERNS, describe_query_block_loops,
                                   spills_fail=True, metrics=BWD_METRICS)
        failed += bad
        print(f"{'FAIL' if bad else 'ok'} D={head_dim} causal={causal}: {text}", flush=True)
    print("\nD=128 full, PTX order of the synchronisation (both consumers' loops follow the producer's prologue):")
    for line in compile_for_hopper(128, False).asm["ptx"].splitlines():
        line = line.strip()
        op = line.split()[1] if line.startswith("@") else (line.split() or [""])[0]  # past a predicate
        if op.startswith(EVENTS):
            print("  " + line[:100])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
