"""fused_kernels benches: a copy (the bandwidth ceiling), residual-add + RMSNorm, RMSNorm, SwiGLU, and fused
linear + cross-entropy, each against eager PyTorch, torch.compile and Liger-Kernel in the same run, and QuACK
where it has the op (the norms; cross-entropy on logits cuBLAS materialised). The peers that come from the
``peers`` extra (Liger, QuACK) are skipped with the reason on a box without them.

    python -m gpufolio bench --project fused_kernels [--quick | --dry-run] [--bench add_rmsnorm]

Importable without torch: torch, triton and the kernels are imported when a case is built.
"""
from __future__ import annotations

import math

from gpufolio.api import GBPS, TIME_MS, Bench, Case, CheckResult, Timing, Tolerance, Unsupported, Variant, Work
from gpufolio.check import summed_tolerance, tolerance_for

from .baselines import liger_missing, quack_missing

PROJECT = "fused_kernels"

def _variants(candidates: tuple[tuple[str, str], ...], quack: str = "") -> list[Variant]:
    """``quack``: the label of QuACK's baseline where it has the op ("" where it has none: SwiGLU)."""
    return [Variant(n, "candidate", label) for n, label in candidates] + [
        Variant("eager", "baseline", "PyTorch eager"),
        Variant("torch_compile", "baseline", "torch.compile"),
        Variant("liger", "baseline", "Liger-Kernel", available=liger_missing),
    ] + ([Variant("quack", "baseline", quack, available=quack_missing)] if quack else [])


GPU_PEERS = ("torch_compile", "liger", "quack")


def _randn(gen, shape, dtype: str, device, scale: float = 1.0, grad: bool = False):
    import torch

    t = torch.randn(shape, generator=gen, device=device, dtype=getattr(torch, dtype))
    if scale != 1.0:
        t.mul_(scale)
    return t.requires_grad_(grad)


def _gpu_only(variant: str, device) -> None:
    if variant in GPU_PEERS and device.type != "cuda":
        raise Unsupported(f"{variant} is measured on the GPU only (dry runs cover eager and ours)")


# ---- copy: the run's own copy-bandwidth ceiling -----------------------------------------------------------
COPY_HEADLINE = {"MiB": 1024, "dtype": "bfloat16"}
# Memory-bound cases take well under a millisecond: 150 ms of reps is hundreds of samples, and keeps the whole
# quick run inside the GPU round's limit (the two correctness checks and torch.compile dominate a case).
FAST_TIMING = Timing(warmup_ms=30, rep_ms=150)
def _copy_configs(mode: str) -> list[dict]:
    if mode == "dry":
        return [{"MiB": 1, "dtype": "float32"}, {"MiB": 1, "dtype": "float16"}]
    if mode == "quick":  # the ceiling for the bf16 benches: one size, one dtype
        return [dict(COPY_HEADLINE)]
    return [{"MiB": m, "dtype": d} for d in ("float32", "bfloat16") for m in (256, 1024)]


def _copy_case(variant: str, p: dict, device) -> Case:
    import torch

    numel = p["MiB"] * 2**20 // torch.empty((), dtype=getattr(torch, p["dtype"])).element_size()

    def make_inputs(gen):
        src = _randn(gen, (numel,), p["dtype"], device)
        return {"src": src, "dst": torch.empty_like(src)}

    if variant == "triton_copy":
        from .ops.copy import triton_copy

        def fn(inp):
            return triton_copy(inp["src"], inp["dst"])
    else:
        def fn(inp):
            return inp["dst"].copy_(inp["src"])

    elem = torch.empty((), dtype=getattr(torch, p["dtype"])).element_size()
    # I/O: read src + write dst
    work = Work(bytes=2 * numel * elem)
    return Case(fn=fn, make_inputs=make_inputs, work=work, reference=lambda inp: inp["src"].clone(),
                tolerance=Tolerance(atol=0.0, rtol=0.0), outputs_in_inputs=("dst",), reference_name="exact",
                timing=FAST_TIMING)


# ---- add_rmsnorm, rmsnorm, swiglu: memory-bound, GB/s ---------------------------------------------------
# primals (tensors the op differentiates), cotangents fed to the backward, the width param, weight names.
SPECS = {
    "add_rmsnorm": {"primals": ("x", "r", "w"), "cots": ("dy", "dr"), "width": "H"},
    "rmsnorm": {"primals": ("x", "w"), "cots": ("dy",), "width": "H"},
    "swiglu": {"primals": ("g", "u"), "cots": ("dh",), "width": "I"},
}


def _rowwise_bytes(bench: str, T: int, N: int, e: int, pas: str) -> int:
    """The fewest bytes one call must move, per pass. T x N activations of e bytes; weights are N elements."""
    act, wgt = T * N * e, N * e
    if bench == "add_rmsnorm":
        fwd = 4 * act + wgt  # I/O fwd: read x, r, w; write y, r_out
        bwd = 4 * act + 2 * wgt  # I/O bwd: read dy, dr_out, r_out, w; write ds (= dx = dr), dw
    elif bench == "rmsnorm":
        fwd = 2 * act + wgt  # I/O fwd: read x, w; write y
        bwd = 3 * act + 2 * wgt  # I/O bwd: read dy, x, w; write dx, dw
    else:
        fwd = 3 * act  # I/O fwd: read g, u; write h
        bwd = 5 * act  # I/O bwd: read dh, g, u; write dg, du
    return fwd if pas == "fwd" else fwd + bwd


# Widths that are not a multiple of 16 elements (no 16-byte vector loads): the quick run measures RMSNorm there.
ODD_WIDTHS = (8191, 4097)


def _rowwise_configs(bench: str) -> callable:
    w = SPECS[bench]["width"]
    big = 8192 if bench == "swiglu" else 4096
    odd = 14336 if bench == "swiglu" else 8191

    def configs(mode: str) -> list[dict]:
        if mode == "dry":
            return [{"T": 7, w: 1000, "dtype": "float32", "pass": "fwd_bwd"},
                    {"T": 5, w: 4097, "dtype": "float16", "pass": "fwd"},
                    {"T": 33, w: 64, "dtype": "float16", "pass": "fwd_bwd"}]
        if mode == "quick":  # the headline (SwiGLU's is forward+backward); RMSNorm adds two odd widths
            passes = ("fwd_bwd",) if bench == "swiglu" else ("fwd", "fwd_bwd")
            out = [{"T": 32768, w: big, "dtype": "bfloat16", "pass": ps} for ps in passes]
            if bench == "rmsnorm":
                out += [{"T": 16384, w: n, "dtype": "bfloat16", "pass": "fwd_bwd"} for n in ODD_WIDTHS]
            return out
        out = [{"T": T, w: big, "dtype": "bfloat16", "pass": ps} for ps in ("fwd", "fwd_bwd")
               for T in (2048, 8192, 32768)]
        odds = ODD_WIDTHS if bench == "rmsnorm" else (odd,)  # full mode holds every quick config too
        return out + [{"T": 16384, w: n, "dtype": "bfloat16", "pass": ps} for n in odds for ps in ("fwd", "fwd_bwd")]

    return configs


def _candidate_fn(bench: str):
    if bench == "add_rmsnorm":
        from .ops.add_rmsnorm import add_rmsnorm

        return add_rmsnorm
    if bench == "rmsnorm":
        from .ops.rmsnorm import rmsnorm

        return rmsnorm
    from .ops.swiglu import swiglu

    return swiglu


def _op_for(bench: str, variant: str, device):
    from . import baselines

    _gpu_only(variant, device)
    if variant == "fused":
        return _candidate_fn(bench)
    if variant == "eager":
        return baselines.EAGER[bench]
    if variant == "torch_compile":
        return baselines.compiled(bench)
    if variant == "quack":
        return baselines.quack(bench)
    return baselines.liger(bench)


def _rowwise_case(bench: str):
    spec = SPECS[bench]

    def case(variant: str, p: dict, device) -> Case:
        import torch

        from .baselines import EAGER

        T, N, dtype, pas = p["T"], p[spec["width"]], p["dtype"], p["pass"]
        train = pas == "fwd_bwd"
        op = _op_for(bench, variant, device)
        # Liger's SwiGLU backward overwrites gate and up with their gradients: the reference keeps a copy.
        keep_ref = variant == "liger" and bench == "swiglu" and train

        def make_inputs(gen):
            inp = {k: _randn(gen, (N,) if k == "w" else (T, N), dtype, device, grad=train) for k in spec["primals"]}
            if train:
                inp.update({k: _randn(gen, (T, N), dtype, device) for k in spec["cots"]})
            if keep_ref:
                inp.update({k + "_ref": inp[k].detach().clone() for k in spec["primals"]})
            return inp

        def run(fn_op, inp, primals):
            outs = fn_op(*primals)
            outs = outs if isinstance(outs, tuple) else (outs,)
            if not train:
                return outs
            grads = torch.autograd.grad(outs, primals, [inp[k] for k in spec["cots"]][: len(outs)])
            return (*[o.detach() for o in outs], *grads)

        def fn(inp):
            primals = [inp[k] for k in spec["primals"]]
            if train:
                return run(op, inp, primals)
            with torch.no_grad():
                return run(op, inp, primals)

        def reference(inp):
            with torch.enable_grad():
                primals = [inp.get(k + "_ref", inp[k]).detach().float().requires_grad_(train)
                           for k in spec["primals"]]
                cots = {k: inp[k].float() for k in spec["cots"]} if train else {}
                return tuple(t.detach() for t in run(EAGER[bench], cots, primals))

        tol = {i: tolerance_for(dtype) for i in range(8)}
        if train and "w" in spec["primals"]:
            n_out = len(spec["cots"])
            tol[n_out + spec["primals"].index("w")] = summed_tolerance(dtype, T)
        e = torch.empty((), dtype=getattr(torch, dtype)).element_size()
        return Case(fn=fn, make_inputs=make_inputs, reference=reference, tolerance=tol,
                    work=Work(bytes=_rowwise_bytes(bench, T, N, e, pas)), reference_name="fp32", timing=FAST_TIMING,
                    mutable_inputs=tuple(spec["primals"]) if keep_ref else ())

    return case


# ---- fused linear + cross-entropy: time and peak extra memory ---------------------------------------------
LCE_HEADLINE = {"T": 8192, "d": 4096, "V": 128256, "dtype": "bfloat16", "label_smoothing": 0.0}


def _lce_configs(mode: str) -> list[dict]:
    if mode == "dry":
        return [{"T": 37, "d": 64, "V": 1000, "dtype": "float32", "label_smoothing": 0.0},
                {"T": 20, "d": 32, "V": 777, "dtype": "float16", "label_smoothing": 0.1}]
    # T = d: every token fits the head (grad_W's own storage), the regime where Liger's memory and
    # torch.compile's time are both within reach; the headline T = 2d is past it (README).
    out = [dict(LCE_HEADLINE), dict(LCE_HEADLINE, T=4096)]
    if mode == "full":
        out += [dict(LCE_HEADLINE, label_smoothing=0.1),
                {"T": 4096, "d": 2048, "V": 32000, "dtype": "bfloat16", "label_smoothing": 0.0}]
    return out


# Candidates: name -> (label, how the chunk is chosen). The budget variants pick the chunk from a memory rule;
# the fixed-chunk ones trace the time-versus-memory curve between them.
LCE_CANDIDATES = {
    "fused": ("Triton CE + chunked cuBLAS: d/2-row chunks (buffer <= half of grad_W), two streams, padding skipped",
              {}),
    "fused_lowmem": ("at Liger's memory budget (per-chunk buffers <= x): the first d tokens in grad_W's storage, "
                     "the rest in chunks that fit", {"budget": "x"}),
    "fused_c512": ("chunks only, 512 rows, two streams", {"chunk": 512, "head": False}),
    "fused_c1024": ("chunks only, 1024 rows, two streams, padding skipped", {"chunk": 1024, "head": False}),
}


def _lce_case(variant: str, p: dict, device) -> Case:
    import torch

    T, d, V, dtype, ls = p["T"], p["d"], p["V"], p["dtype"], float(p["label_smoothing"])
    if variant in LCE_CANDIDATES:
        from .ops.linear_cross_entropy import linear_cross_entropy

        how = LCE_CANDIDATES[variant][1]
        e = torch.empty((), dtype=getattr(torch, dtype)).element_size()
        # Liger's budget: per-chunk buffers no larger than the input x (T * d elements).
        budget = T * d * e if how.get("budget") == "x" else None
        chunk = how.get("chunk")  # more rows than tokens: one chunk of all of them
        head = how.get("head")  # None: ChunkPlan.auto decides

        def op(x, w, y, label_smoothing):
            return linear_cross_entropy(x, w, y, label_smoothing=label_smoothing, max_chunk_bytes=budget,
                                        chunk=chunk, head=head)
    else:
        if variant == "quack" and ls:
            raise Unsupported("quack.cross_entropy has no label smoothing")
        op = _op_for("linear_cross_entropy", variant, device)

    def make_inputs(gen):
        x = _randn(gen, (T, d), dtype, device, grad=True)
        # std 0.02 (a common LM-head init) gives logits of std ~1.3 at d = 4096
        w = _randn(gen, (V, d), dtype, device, scale=0.02, grad=True)
        y = torch.randint(0, V, (T,), generator=gen, device=device)
        y[torch.rand(T, generator=gen, device=device) < 0.05] = -100  # padding rows
        return {"x": x, "w": w, "y": y}

    def fn(inp):
        loss = op(inp["x"], inp["w"], inp["y"], ls)
        gx, gw = torch.autograd.grad(loss, (inp["x"], inp["w"]))
        return loss.detach().float(), gx, gw

    def check(inp, out) -> CheckResult:
        """Normwise: max|out - ref| <= rtol * max|ref| per output. The gradients are ~1e-6 in size (mean over
        T tokens of probabilities ~1/V), so a fixed atol would be meaningless; the scale is the reference's."""
        from .baselines import eager_linear_cross_entropy

        x = inp["x"].detach().float().requires_grad_()
        w = inp["w"].detach().float().requires_grad_()
        with torch.enable_grad():
            loss = eager_linear_cross_entropy(x, w, inp["y"], ls)
            ref = (loss.detach(), *torch.autograd.grad(loss, (x, w)))
        rtol = tolerance_for(dtype).rtol
        detail, ok = {}, True
        for name, o, r in zip(("loss", "grad_x", "grad_w"), out, ref):
            o = o.float()
            finite = bool(torch.isfinite(o).all())
            err = float((o - r).abs().max()) if finite else math.inf
            scale = float(r.abs().max())
            passed = finite and err <= rtol * scale
            ok &= passed
            detail[name] = {"max_abs_err": err if finite else None, "ref_max_abs": scale, "bound": rtol * scale,
                            "passed": passed}
        return CheckResult(passed=ok, reference="fp32 eager, normwise", detail=detail)

    flops = 3 * 2 * T * V * d  # logits, grad_x and grad_w GEMMs; the softmax is O(T*V) and left out
    # 40-55 ms a call: ~8 timed reps is enough for a stable median, and the quick run must fit its GPU round.
    return Case(fn=fn, make_inputs=make_inputs, check=check, work=Work(flops=flops),
                extra_metrics=lambda s: {"tflops": (flops / s / 1e12, "TFLOP/s", True)},
                timing=Timing(warmup_ms=60, rep_ms=350, min_reps=8, warmup_min=2))


# ---- the registry --------------------------------------------------------------------------------------------
_NORM_HEADLINE = {"T": 32768, "H": 4096, "dtype": "bfloat16", "pass": "fwd"}

# Run order = this order: the benches with open questions first, so a round cut short loses the settled ones.
BENCHES: list[Bench] = [
    Bench(project=PROJECT, name="copy", metric=GBPS,
          variants=[Variant("triton_copy", "candidate", "Triton vectorised copy"),
                    Variant("torch_copy", "baseline", "Tensor.copy_")],
          configs=_copy_configs, case=_copy_case, x_param="MiB",
          headline_params=COPY_HEADLINE,
          description="Device-to-device copy: the run's own bandwidth ceiling (bytes = read + write)."),
    Bench(project=PROJECT, name="swiglu", metric=GBPS, variants=_variants((("fused", "Triton fused"),)),
          configs=_rowwise_configs("swiglu"), case=_rowwise_case("swiglu"), x_param="T",
          headline_params={"T": 32768, "I": 8192, "dtype": "bfloat16", "pass": "fwd_bwd"},
          headline_baseline="torch_compile", description="h = silu(gate) * up."),
    Bench(project=PROJECT, name="linear_cross_entropy", metric=TIME_MS,
          variants=_variants(tuple((n, label) for n, (label, _) in LCE_CANDIDATES.items()),
                             quack="cuBLAS logits + QuACK cross-entropy"),
          configs=_lce_configs, case=_lce_case, x_param="T", headline_params=LCE_HEADLINE,
          headline_baseline="torch_compile",
          description="Mean cross-entropy of x @ W^T, forward + backward (grads of x and W); ignore_index rows."),
    Bench(project=PROJECT, name="add_rmsnorm", metric=GBPS,
          variants=_variants((("fused", "Triton fused"),), quack="QuACK rmsnorm(residual=, prenorm=True)"),
          configs=_rowwise_configs("add_rmsnorm"), case=_rowwise_case("add_rmsnorm"), x_param="T",
          headline_params=_NORM_HEADLINE, headline_baseline="torch_compile",
          description="s = x + residual; y = RMSNorm(s) * w; returns (y, s). Forward and forward+backward."),
    Bench(project=PROJECT, name="rmsnorm", metric=GBPS, variants=_variants((("fused", "Triton fused"),), quack="QuACK"),
          configs=_rowwise_configs("rmsnorm"), case=_rowwise_case("rmsnorm"), x_param="T",
          headline_params=_NORM_HEADLINE, headline_baseline="torch_compile",
          description="y = RMSNorm(x) * w over the last dimension."),
]
