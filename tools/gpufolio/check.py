"""The correctness gate: a variant's time is recorded only if its output matches a higher-precision reference.

Every check draws fresh random inputs (a kernel returning a cached output fails), NaN-poisons the outputs the
call writes in place (a kernel that writes nothing, or skips a tail, fails), rejects NaN/Inf, and runs both
before and after the timed loop (a kernel right only on its first call fails).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .api import Case, CheckResult, FlashRule, Tolerance

# Per-dtype tolerances for elementwise outputs against an fp32/fp64 reference: rounding of the output dtype
# (bf16 keeps 8 bits of mantissa, 2^-8 ≈ 3.9e-3; fp16 11 bits, 2^-11 ≈ 4.9e-4) with room for reordered sums.
# Reductions over long axes (GEMM's K) should scale these; the bench says so in its own Tolerance.
TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(atol=1e-10, rtol=1e-10),
    "float32": Tolerance(atol=1e-5, rtol=1e-5),
    "tf32": Tolerance(atol=1e-3, rtol=1e-3),
    "float16": Tolerance(atol=1e-3, rtol=2e-3),
    "bfloat16": Tolerance(atol=1e-2, rtol=1.6e-2),
}


def tolerance_for(dtype: Any) -> Tolerance:
    name = str(dtype).replace("torch.", "")
    try:
        return TOLERANCES[name]
    except KeyError:
        raise KeyError(f"no tolerance for dtype {name}; known: {sorted(TOLERANCES)}") from None


def flatten(outputs: Any) -> list:
    """A tensor, or a (nested) tuple/list/dict of tensors, as a flat list in a stable order."""
    import torch

    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, Mapping):
        return [t for k in sorted(outputs) for t in flatten(outputs[k])]
    if isinstance(outputs, (tuple, list)):
        return [t for o in outputs for t in flatten(o)]
    raise TypeError(f"outputs must be tensors or tuples/lists/dicts of tensors, got {type(outputs).__name__}")


def poison(inputs: Mapping[str, Any], names: Iterable[str]) -> None:
    """Fill the named output buffers with NaN (floats) or the dtype's max (integers) before a checked call."""
    import torch

    for name in names:
        if name not in inputs:
            raise KeyError(f"outputs_in_inputs names {name!r}, which make_inputs did not return")
        t = inputs[name]
        if t.is_floating_point():
            t.fill_(float("nan"))
        else:
            t.fill_(torch.iinfo(t.dtype).max)


def compare(out: Any, ref: Any, tol: Tolerance | Mapping[int, Tolerance]) -> dict[str, Any]:
    """Elementwise |out - ref| <= atol + rtol·|ref| for every output tensor; NaN/Inf in ``out`` fail."""
    import torch

    outs, refs = flatten(out), flatten(ref)
    if len(outs) != len(refs):
        return _fail(f"{len(outs)} outputs, reference has {len(refs)}")
    checks = []
    for i, (o, r) in enumerate(zip(outs, refs)):
        t = tol[i] if isinstance(tol, Mapping) else tol
        if tuple(o.shape) != tuple(r.shape):
            return _fail(f"output {i}: shape {tuple(o.shape)} != reference {tuple(r.shape)}")
        o64, r64 = o.detach().to(torch.float64), r.detach().to(torch.float64).to(o.device)
        finite = torch.isfinite(o64)
        n_bad = int((~finite & torch.isfinite(r64)).sum())
        diff = (o64 - r64).abs()
        diff = torch.where(finite, diff, torch.full_like(diff, math.inf))
        ok = bool((diff <= t.atol + t.rtol * r64.abs()).all()) and n_bad == 0
        ref_scale = float(r64.abs().max()) if r64.numel() else 0.0
        max_abs = float(diff.max()) if diff.numel() else 0.0
        rel_l2 = float(torch.linalg.vector_norm(torch.nan_to_num(o64 - r64, nan=math.inf)) /
                       max(float(torch.linalg.vector_norm(r64)), 1e-300)) if n_bad == 0 else math.inf
        checks.append({"output": i, "passed": ok, "max_abs_err": max_abs,
                       "max_rel_err": max_abs / ref_scale if ref_scale else max_abs, "rel_l2_err": rel_l2,
                       "non_finite": n_bad, "atol": t.atol, "rtol": t.rtol})
    return _summary(checks)


def compare_flash_rule(out: Any, ref: Any, lowp: Any, rule: FlashRule) -> dict[str, Any]:
    """FlashAttention's rule, per output: max|out - ref| <= factor · max|lowp - ref| + slack."""
    import torch

    outs, refs, lows = flatten(out), flatten(ref), flatten(lowp)
    if not len(outs) == len(refs) == len(lows):
        return _fail(f"{len(outs)} outputs, reference {len(refs)}, same-dtype reference {len(lows)}")
    checks = []
    for i, (o, r, lo) in enumerate(zip(outs, refs, lows)):
        if tuple(o.shape) != tuple(r.shape):
            return _fail(f"output {i}: shape {tuple(o.shape)} != reference {tuple(r.shape)}")
        r64 = r.detach().to(torch.float64)
        o64 = o.detach().to(torch.float64).to(r64.device)
        n_bad = int((~torch.isfinite(o64)).sum())
        err = float((o64 - r64).abs().max()) if n_bad == 0 else math.inf
        lowp_err = float((lo.detach().to(torch.float64).to(r64.device) - r64).abs().max())
        bound = rule.factor * lowp_err + rule.slack
        ref_scale = float(r64.abs().max()) or 1.0
        checks.append({"output": i, "passed": err <= bound, "max_abs_err": err, "max_rel_err": err / ref_scale,
                       "lowp_max_abs_err": lowp_err, "bound": bound, "non_finite": n_bad,
                       "atol": bound, "rtol": 0.0})
    return _summary(checks)


def _fail(message: str) -> dict[str, Any]:
    return {"passed": False, "max_abs_err": None, "max_rel_err": None, "atol": None, "rtol": None,
            "checks": [], "detail": {"error": message}}


def _summary(checks: list[dict]) -> dict[str, Any]:
    worst = max(checks, key=lambda c: (not c["passed"], c["max_rel_err"] or 0.0)) if checks else {}
    return {"passed": all(c["passed"] for c in checks) and bool(checks),
            "max_abs_err": _finite_or_none(max((c["max_abs_err"] for c in checks), default=None)),
            "max_rel_err": _finite_or_none(max((c["max_rel_err"] for c in checks), default=None)),
            "atol": worst.get("atol"), "rtol": worst.get("rtol"),
            "checks": [{k: _finite_or_none(v) for k, v in c.items()} for c in checks], "detail": None}


def _finite_or_none(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def run_check(case: Case, gen: Any, sync=lambda: None) -> dict[str, Any]:
    """One gate pass: fresh inputs from ``gen``, poison, call, compare. Returns the correctness dict."""
    inputs = case.make_inputs(gen)
    poison(inputs, case.outputs_in_inputs)
    out = case.fn(inputs)
    sync()
    if case.check is not None:
        res: CheckResult = case.check(inputs, out)
        return {"passed": bool(res.passed), "reference": res.reference, "max_abs_err": None, "max_rel_err": None,
                "atol": None, "rtol": None, "checks": [], "detail": dict(res.detail)}
    ref = case.reference(inputs)
    if isinstance(case.tolerance, FlashRule):
        result = compare_flash_rule(out, ref, case.lowp_reference(inputs), case.tolerance)
    else:
        result = compare(out, ref, case.tolerance)
    result["reference"] = case.reference_name
    return result
