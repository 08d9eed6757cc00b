"""Compiles the Gluon forward (``gluon_fwd``) for sm_90a without a GPU and prints what its PTX holds.

Catches Gluon API, layout and register-split errors before GPU time is spent: per head dim, causal flag,
ping-pong and overlap setting it runs the full pipeline (Gluon -> TTGIR -> LLVM -> PTX -> cubin through ptxas) and counts
the instructions that show the design landed: ``setmaxnreg`` (the register split), ``wgmma``, TMA bulk
copies and mbarrier waits/arrives. Needs triton 3.6 (the API the kernel is written against), no torch:

    python -m gpufolio_projects.flash_attention.lab.gluon_compile   # in a venv with triton==3.6.0
"""
from __future__ import annotations

import itertools
import re
import sys

PATTERNS = {"setmaxnreg": r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+\d+", "wgmma": r"wgmma\.mma_async\.\S+",
            "tma load": r"cp\.async\.bulk\.tensor\.\S+", "mbarrier wait": r"mbarrier\.try_wait\.\S+",
            "mbarrier arrive": r"mbarrier\.arrive\.\S+",
            # warpgroup-wide named barriers (bar.sync id, 128): the compiler puts one before every mbarrier arrive
            "bar.sync 128": r"\bbar\.sync\s+\d+, 128;"}


def compile_for_hopper(head_dim: int, causal: bool, pingpong: bool, overlap: bool):
    """The kernel compiled for sm_90a (a ``CompiledKernel``; its ``asm`` holds ttgir, ptx and cubin)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from ..kernels import gluon_fwd as g

    args = g.kernel_args(head_dim, causal, pingpong, overlap)
    num_warps = args.pop("num_warps")
    q_layout, kv_layout = g.smem_layouts(16, head_dim)
    signature = {"q_desc": f"tensordesc<bf16[{g.BLOCK_M}, {head_dim}],{q_layout!r}>",
                 "k_desc": f"tensordesc<bf16[{g.BLOCK_N}, {head_dim}],{kv_layout!r}>",
                 "v_desc": f"tensordesc<bf16[{g.BLOCK_N}, {head_dim}],{kv_layout!r}>",
                 "o_ptr": "*bf16", "lse_ptr": "*fp32", "seqlen": "i32", "qk_scale": "fp32"}
    signature.update({name: "constexpr" for name in args})
    names = list(signature)
    src = GluonASTSource(g._attn_fwd_ws_kernel, signature, constexprs={(names.index(n), ): v for n, v in args.items()})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})


def ptxas_spills(ptx: str) -> str:
    """ptxas's register and spill line for the PTX (the compile itself does not report it without a GPU)."""
    import subprocess
    import tempfile

    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        res = subprocess.run([get_ptxas(90).path, "-arch=sm_90a", "-v", f.name, "-o", "/dev/null"],
                             capture_output=True, text=True)
    found = re.findall(r"\d+ bytes spill stores, \d+ bytes spill loads", res.stderr)
    return found[0] if found else f"ptxas said: {res.stderr.strip()[-200:]}"


def main() -> None:
    failed = 0
    for head_dim, causal, pingpong, overlap in itertools.product((128, 64), (False, True), (True, False),
                                                                 (False, True)):
        label = f"D={head_dim} causal={causal} pingpong={pingpong} overlap={overlap}"
        try:
            kernel = compile_for_hopper(head_dim, causal, pingpong, overlap)
        except Exception as exc:  # noqa: BLE001 - report each config and go on
            print(f"FAIL {label}: {type(exc).__name__}: {str(exc)[-600:]}", flush=True)
            failed += 1
            continue
        ptx = kernel.asm["ptx"]
        spills = ptxas_spills(ptx)
        counts = {name: re.findall(p, ptx) for name, p in PATTERNS.items()}
        regs = sorted({int(x.split()[-1]) for x in counts["setmaxnreg"]})
        print(f"ok {label}: {kernel.metadata.shared} B shared, {kernel.metadata.num_warps} warps, "
              f"setmaxnreg values {regs}, {spills}, " + ", ".join(f"{len(v)} {k}" for k, v in counts.items()
                                                        if k != "setmaxnreg"), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
