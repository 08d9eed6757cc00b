"""Compiles the Gluon forward (``gluon_fwd``) for sm_90a without a GPU and prints what its PTX holds.

Catches Gluon API, layout and register-split errors before GPU time is spent: per head dim, causal flag,
ping-pong, overlap, lean and softmax-under-P·V setting it runs the full pipeline (Gluon -> TTGIR -> LLVM -> PTX
-> cubin through ptxas) and counts the instructions that show the design landed: ``setmaxnreg`` (the register
split), ``wgmma``, TMA bulk copies and mbarrier waits/arrives in the whole kernel, and fails a setting whose
wgmmas ptxas serialised; then, in the SASS (nvdisasm), each consumer's key-block loop — what every key block
pays: its static instruction count (both sides of the mask branch), warpgroup ``BAR.SYNC``, mbarrier arrives
and waits, wgmma, how many exponentials run under P·V, the row max's longest FMNMX chain, and how many
exponentials and FADDs sit after the turn's try-wait. Needs triton 3.6 (the API the kernel is written against; its
wheel carries ptxas and nvdisasm), no torch:

    python -m gpufolio_projects.flash_attention.lab.gluon_compile [--lean] [--short-chains on|off] [--variant NAME]

(triton==3.6.0; ``--variant`` compiles one of ``lab/variants.py``'s forwards in place of the committed kernel.)
"""
from __future__ import annotations

import argparse
import itertools
import re
import subprocess
import sys
import tempfile

PATTERNS = {"setmaxnreg": r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+\d+", "wgmma": r"wgmma\.mma_async\.\S+",
            "tma load": r"cp\.async\.bulk\.tensor\.\S+", "mbarrier wait": r"mbarrier\.try_wait\.\S+",
            "mbarrier arrive": r"mbarrier\.arrive\.\S+",  # lean's per-thread cp.async.mbarrier.arrive too
            # warpgroup-wide named barriers (bar.sync id, 128): the compiler puts one before every one-thread
            # mbarrier arrive, and its shared-memory analysis, which counts a wait as a write to its barrier, one
            # where a barrier is touched again (once per key-block loop)
            "bar.sync 128": r"\bbar\.sync\s+\d+, 128;"}


def compile_for_hopper(head_dim: int, causal: bool, pingpong: bool, overlap: bool, lean: bool = False,
                       under_pv: bool = False, persistent: bool = False, variant: str | None = None):
    """The kernel (or ``variant`` of ``variants.FWD_VARIANTS``) compiled for sm_90a (a ``CompiledKernel``; its
    ``asm`` holds ttgir, ptx and cubin)."""
    from .variants import forward

    g = forward(variant)
    args = g.kernel_args(head_dim, causal, pingpong, overlap, lean, under_pv, persistent)
    q_layout, kv_layout = g.smem_layouts(16, head_dim)
    signature = {"q_desc": f"tensordesc<bf16[{g.BLOCK_M}, {head_dim}],{q_layout!r}>",
                 "k_desc": f"tensordesc<bf16[{g.BLOCK_N}, {head_dim}],{kv_layout!r}>",
                 "v_desc": f"tensordesc<bf16[{g.BLOCK_N}, {head_dim}],{kv_layout!r}>",
                 "o_ptr": "*bf16", "lse_ptr": "*fp32", "seqlen": "i32", "qk_scale": "fp32", "n_bh": "i32",
                 "group": "i32", "sched_ptr": "*i32"}
    # What the launcher specialises on at the headline shape: torch's allocations are 16-byte aligned and
    # S = 4096 is a multiple of 16 (without it the epilogue stores 2 bytes at a time and the loop masks more).
    aligned = ("o_ptr", "lse_ptr", "seqlen", "sched_ptr")
    return compile_gluon(g._attn_fwd_ws_kernel, signature, args, aligned)


def compile_gluon(kernel, signature: dict, args: dict, aligned: tuple = ()):
    """``kernel`` compiled for sm_90a: ``signature`` types its runtime arguments in order, ``args`` (a
    ``kernel_args`` dict) gives its constexprs and ``num_warps``; the arguments named in ``aligned`` are
    declared divisible by 16, as triton's launcher specialises them when they are."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    args = dict(args)
    num_warps = args.pop("num_warps")
    signature = {**signature, **{name: "constexpr" for name in args}}
    names = list(signature)
    src = GluonASTSource(kernel, signature, constexprs={(names.index(n), ): v for n, v in args.items()},
                         attrs={(names.index(n), ): [["tt.divisibility", 16]] for n in aligned})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})


def ptxas_spills(ptx: str) -> str:
    """ptxas's spill line for the PTX (the compile itself does not report it without a GPU), and its warning,
    if any, that it serialised the wgmmas (it then waits out every wgmma as it issues it, which undoes the
    kernel's pipelining without changing its result)."""
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        res = subprocess.run([get_ptxas(90).path, "-arch=sm_90a", "-v", f.name, "-o", "/dev/null"],
                             capture_output=True, text=True)
    found = re.findall(r"\d+ bytes spill stores, \d+ bytes spill loads", res.stderr)
    serialised = re.findall(r"wgmma.mma_async instructions are serialized due to ([^\n]*?) for the function",
                            res.stderr)
    line = found[0] if found else f"ptxas said: {res.stderr.strip()[-200:]}"
    return line + (f", WGMMA SERIALISED ({serialised[0]})" if serialised else "")


# SASS opcode families counted in a key-block loop (nvdisasm's spelling on sm_90a).
# STL/LDL: local-memory traffic, i.e. spills inside the loop (ptxas's total may all sit in a tile's epilogue).
SASS_FAMILIES = {"BAR.SYNC": ("BAR.SYNC",), "arrive": ("SYNCS.ARRIVE", "ARRIVES."), "wait": ("SYNCS.PHASECHK",),
                 "wgmma": ("HGMMA",), "spill ld/st": ("STL", "LDL")}
_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


def sass_of(cubin: bytes) -> str:
    """The cubin's SASS through nvdisasm (shipped in triton's wheel), code only, branch targets as labels."""
    from triton import knobs

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([knobs.nvidia.nvdisasm.path, "-c", f.name], capture_output=True, text=True,
                              check=True).stdout


def key_block_loops(sass: str, metrics: dict | None = None) -> list[dict]:
    """Each consumer's key-block loop in the SASS, in code order: the innermost loops (backward branches) that
    issue wgmma, with their static instruction count, the counts of ``SASS_FAMILIES``, and each of ``metrics``
    (name -> function of the loop body; the forward's ``SOFTMAX_METRICS`` unless given): (overlap) how many
    exponentials (MUFU.EX2) sit between the wait on S_j (``WARPGROUP.DEPBAR.LE gsb0, 0x1``) and the wait on
    P_{j-1}·V_{j-1} (``... 0x0``), i.e. how much of the softmax runs under its own P·V, and the longest chain of
    dependent FMNMX (the row max's). The try-wait retry stubs after the last EXIT branch back into the code and
    are not loops."""
    metrics = SOFTMAX_METRICS if metrics is None else metrics
    instrs, label_addr, pending = [], {}, []
    for line in sass.splitlines():
        label = re.match(r"\s*\.(L_x_\d+):", line)
        if label:
            pending.append(label.group(1))
            continue
        m = _SASS_LINE.search(line)
        if m:
            addr = int(m.group(1), 16)
            label_addr.update({name: addr for name in pending})
            pending = []
            instrs.append((addr, m.group(2), m.group(3)))
    last_exit = max((a for a, op, _ in instrs if op == "EXIT"), default=0)
    loops = []
    for addr, op, rest in instrs:
        target = re.search(r"\.(L_x_\d+)", rest)
        if op.startswith("BRA") and target and addr < last_exit and label_addr.get(target.group(1), addr + 1) <= addr:
            body = [(o, r) for a, o, r in instrs if label_addr[target.group(1)] <= a <= addr]
            if any(o.startswith("HGMMA") for o, _ in body):
                loops.append((label_addr[target.group(1)], addr, body))
    inner = [(lo, hi, body) for lo, hi, body in loops
             if not any(lo <= lo2 and hi2 <= hi and (lo2, hi2) != (lo, hi) for lo2, hi2, _ in loops)]
    return [{"instructions": len(body), **{name: sum(o.startswith(prefixes) for o, _ in body)
                                           for name, prefixes in SASS_FAMILIES.items()},
             **{name: metric(body) for name, metric in metrics.items()}}
            for _, _, body in sorted(inner)]


def _longest_chain(body: list[tuple[str, str]], opcode: str) -> int:
    """The longest run of ``opcode`` instructions in ``body`` each reading the one before's result (in code
    order, straight-line: a register written by anything else starts over): the softmax's row max is one
    FMNMX chain per row unless the reduction is split."""
    depth: dict[str, int] = {}
    longest = 0
    for op, rest in body:
        regs = re.findall(r"\bR\d+\b", rest)
        if not regs:
            continue
        dest, sources = regs[0], regs[1:]
        if op.split(".")[0] == opcode:
            depth[dest] = 1 + max((depth.get(r, 0) for r in sources), default=0)
            longest = max(longest, depth[dest])
        else:
            depth.pop(dest, None)
    return longest


def _after_turn(body: list[tuple[str, str]], opcode: str) -> int:
    """``opcode`` instructions after the last mbarrier try-wait before the wait on P·V (``WARPGROUP.DEPBAR.LE gsb0,
    0x0``): under P·V that try-wait is the turn's, and softmax work placed after it stalls whenever the turn is
    not yet free. In the kernels compiled so far the row sum's per-block shuffles (each reads every exponential
    of its row) kept most of the softmax above it; without them ptxas sank nearly all of it below. A loop with no
    try-wait before a wait on P·V (the schedules without the overlap) counts from its top."""
    pv_wait = next((i for i, (op, rest) in enumerate(body)
                    if op.startswith("WARPGROUP.DEPBAR") and rest.strip().endswith("0x0")), 0)
    start = max((i for i, (op, _) in enumerate(body[:pv_wait]) if op.startswith("SYNCS.PHASECHK")), default=0)
    return sum(op.startswith(opcode) for op, _ in body[start:])


def exp_between_waits(body: list[tuple[str, str]]) -> int:
    """MUFU.EX2 between a ``WARPGROUP.DEPBAR.LE gsb0, 0x1`` and the next ``... 0x0`` (0 without the overlap)."""
    count, inside = 0, False
    for op, rest in body:
        if op.startswith("WARPGROUP.DEPBAR"):
            inside = rest.strip().endswith("0x1")
        elif inside and op == "MUFU.EX2":
            count += 1
    return count


def stores_under_wgmma(body: list[tuple[str, str]], opcode: str = "STS.128") -> int:
    """``opcode`` instructions issued while a wgmma may be in flight: after an ``HGMMA`` and before the next
    ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` (``0x1`` leaves one group in flight). The state at the top of the loop is
    the one its last instruction leaves: a wgmma in flight across the back edge counts."""
    def walk(in_flight: bool) -> tuple[int, bool]:
        count = 0
        for op, rest in body:
            if op.startswith("HGMMA"):
                in_flight = True
            elif op.startswith("WARPGROUP.DEPBAR") and rest.strip().endswith("0x0"):
                in_flight = False
            elif op == opcode and in_flight:
                count += 1
        return count, in_flight

    return walk(walk(False)[1])[0]


# The forward's softmax metrics per key-block loop, by report name (the backward's report has its own, BWD_METRICS).
SOFTMAX_METRICS = {"exp under P·V": exp_between_waits, "FMNMX chain": lambda body: _longest_chain(body, "FMNMX"),
                   "exp after turn": lambda body: _after_turn(body, "MUFU.EX2"),
                   "FADD after turn": lambda body: _after_turn(body, "FADD")}


def describe_loops(loops: list[dict], unit: str = "key block", skip: tuple = ()) -> str:
    """'per key block: 597 instructions, 1 BAR.SYNC, ...' (the consumers' loops, 'a/b' where they differ; the
    counts named in ``skip`` left out)."""
    if not loops:
        return f"per {unit}: no consumer loop found"
    return f"per {unit}: " + ", ".join(
        f"{'/'.join(str(v) for v in dict.fromkeys(loop[k] for loop in loops))} {k}" for k in loops[0] if k not in skip)


def compile_report(kernel, patterns: dict, describe, spills_fail: bool = False,
                   metrics: dict | None = None) -> tuple[bool, str]:
    """(failed, one line) for a compiled kernel: shared memory, warps, the setmaxnreg values, ptxas's spill line,
    the count of each of ``patterns`` in the PTX, then ``describe`` of the consumers' SASS loops (with
    ``metrics``, as ``key_block_loops`` takes them). Fails on serialised wgmma, and with ``spills_fail`` on any
    spill."""
    ptx = kernel.asm["ptx"]
    spills = ptxas_spills(ptx)
    bad = "SERIALISED" in spills or (spills_fail and not spills.startswith("0 bytes spill stores, 0 bytes spill loads"))
    counts = {name: re.findall(p, ptx) for name, p in patterns.items()}
    regs = sorted({int(x.split()[-1]) for x in counts["setmaxnreg"]})
    return bad, (f"{kernel.metadata.shared} B shared, {kernel.metadata.num_warps} warps, setmaxnreg values {regs}, "
                 f"{spills}, " + ", ".join(f"{len(v)} {k}" for k, v in counts.items() if k != "setmaxnreg")
                 + "; " + describe(key_block_loops(sass_of(kernel.asm["cubin"]), metrics)))


def settings(lean_only: bool) -> list[tuple]:
    """(lean, under_pv, persistent, head_dim, causal, pingpong, overlap) for every compiled setting: each
    ping-pong and overlap choice without and with lean, then the softmax under P·V, which needs all three, then
    it persistent."""
    grid = itertools.product((True,) if lean_only else (False, True), (False,), (False,), (128, 64), (False, True),
                             (True, False), (False, True))
    under_pv = itertools.product((True,), (True,), (False, True), (128, 64), (False, True), (True,), (True,))
    return [*grid, *under_pv]


def main() -> None:
    from .variants import FWD_VARIANTS, forward

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lean", action="store_true", help="the lean settings only (softmax under P·V included)")
    ap.add_argument("--short-chains", choices=("on", "off"),
                    help="compile with the forward's SHORT_CHAINS set so at every head dim (default: as committed)")
    ap.add_argument("--variant", choices=FWD_VARIANTS,
                    help="compile this variant of lab/variants.py instead of the kernel as committed (the "
                         "variants change the short-chain softmax: with --short-chains on at D = 128)")
    a = ap.parse_args()
    if a.short_chains:  # the table of the module compiled: a variant has its own
        table = forward(a.variant).SHORT_CHAINS
        table.update(dict.fromkeys(table, a.short_chains == "on"))
    failed = 0
    for lean, under_pv, persistent, head_dim, causal, pingpong, overlap in settings(a.lean):
        label = (f"D={head_dim} causal={causal} pingpong={pingpong} overlap={overlap} lean={lean}"
                 + (" under_pv=True" if under_pv else "") + (" persistent=True" if persistent else ""))
        try:
            kernel = compile_for_hopper(head_dim, causal, pingpong, overlap, lean, under_pv, persistent, a.variant)
        except Exception as exc:  # noqa: BLE001 - report each config and go on
            print(f"FAIL {label}: {type(exc).__name__}: {str(exc)[-600:]}", flush=True)
            failed += 1
            continue
        bad, text = compile_report(kernel, PATTERNS, describe_loops)
        failed += bad
        print(f"{'FAIL' if bad else 'ok'} {label}: {text}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
