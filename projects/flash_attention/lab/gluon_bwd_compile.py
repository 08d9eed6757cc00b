"""Compiles the Gluon backward (``gluon_bwd``) for sm_90a without a GPU and prints what its PTX holds.

Catches Gluon API, layout and register-split errors before GPU time is spent: for head dim 64 and 128, causal
and not, it runs the full pipeline (Gluon -> TTGIR -> LLVM -> PTX -> cubin through ptxas) and counts, in the
whole kernel's PTX, ``setmaxnreg`` (the register split), ``wgmma``, TMA loads, dQ's TMA reduce-adds, global
atomics (none expected), mbarrier waits and arrives, warpgroup ``bar.sync`` and proxy fences, with ptxas's spill
line; then, in the SASS (nvdisasm), each consumer's query-block loop: its static instruction count, warpgroup
``BAR.SYNC``, mbarrier arrives and waits, wgmma, local-memory loads/stores, and how many exponentials run
between the wait on Sᵀ and the wait on dPᵀ (under dPᵀ's wgmma). A setting fails on a compile error, any spill,
or wgmmas that ptxas serialised. Needs triton 3.6 (the API the kernel is written against; its wheel carries
ptxas and nvdisasm), no torch:

    python -m gpufolio_projects.flash_attention.lab.gluon_bwd_compile [--variant NAME]   # triton==3.6.0

(``--variant`` compiles one of ``lab/variants.py``'s backwards in place of the committed kernel.)
"""
from __future__ import annotations

import argparse
import itertools
import sys

from .gluon_compile import (
    PATTERNS,
    compile_gluon,
    compile_report,
    describe_loops,
    exp_between_waits,
    stores_under_wgmma,
)

# The forward's counts plus dQ's TMA reduce-adds, any global atomics (there should be none: dQ goes through TMA),
# and the generic-to-async proxy fences (dS before the dQ wgmma, dQ before its reduce).
BWD_PATTERNS = {**PATTERNS, "tma reduce": r"cp\.reduce\.async\.bulk\.tensor\S*",
                "global atomic": r"\b(?:red|atom)\.global\.\S+", "fence.proxy.async": r"fence\.proxy\.async\S*"}


# Per query-block loop: how many exponentials run between the wait on Sᵀ (one group left in flight) and the wait on
# dPᵀ, i.e. under dPᵀ's wgmma; and how many of dQ's 16-byte tile stores run with a wgmma in flight (after the
# last wait that empties the group, a store holds up the consumer's next wgmma).
BWD_METRICS = {"exp under dPᵀ": exp_between_waits, "dQ STS.128 under a wgmma": stores_under_wgmma}


def describe_query_block_loops(loops: list[dict]) -> str:
    """'per query block: 538/530 instructions, 3/4 BAR.SYNC, ...' for the two consumers' loops, from the forward's
    SASS loop finder (the innermost loops that issue wgmma), with ``BWD_METRICS``."""
    return describe_loops(loops, "query block")


def compile_for_hopper(head_dim: int, causal: bool, variant: str | None = None):
    """The backward kernel (or ``variant`` of ``variants.BWD_VARIANTS``) compiled for sm_90a (a ``CompiledKernel``;
    its ``asm`` holds ttgir, ptx and cubin)."""
    from .variants import backward

    g = backward(variant)

    layouts, blocks = g.smem_layouts(16, head_dim), g.block_shapes(head_dim)
    dtypes = dict(q_desc="bf16", k_desc="bf16", v_desc="bf16", do_desc="bf16", lse_desc="fp32", delta_desc="fp32",
                  dq_desc="fp32")
    signature = {name: f"tensordesc<{dt}{blocks[name]},{layouts[name]!r}>" for name, dt in dtypes.items()}
    signature.update({"dk_ptr": "*bf16", "dv_ptr": "*bf16", "seqlen": "i32", "lse_stride": "i32", "qk_scale": "fp32",
                      "scale": "fp32"})
    # As the launcher specialises the headline shape: dK and dV 16-byte aligned, S and LSE's row stride multiples
    # of 16.
    return compile_gluon(g._attn_bwd_ws_kernel, signature, g.kernel_args(head_dim, causal),
                         aligned=("dk_ptr", "dv_ptr", "seqlen", "lse_stride"))


def main() -> None:
    from .variants import BWD_VARIANTS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=BWD_VARIANTS,
                    help="compile this variant of lab/variants.py instead of the kernel as committed")
    a = ap.parse_args()
    failed = 0
    for head_dim, causal in itertools.product((128, 64), (False, True)):
        label = f"D={head_dim} causal={causal}"
        try:
            kernel = compile_for_hopper(head_dim, causal, a.variant)
        except Exception as exc:  # noqa: BLE001 - report each setting and go on
            print(f"FAIL {label}: {type(exc).__name__}: {str(exc)[-1500:]}", flush=True)
            failed += 1
            continue
        bad, text = compile_report(kernel, BWD_PATTERNS, describe_query_block_loops, spills_fail=True,
                                   metrics=BWD_METRICS)
        failed += bad
        print(f"{'FAIL' if bad else 'ok'} {label}: {text}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
