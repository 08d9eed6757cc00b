"""The correctness gate: a variant's time is recorded only if its output matches a higher-precision reference.

Every check draws fresh random inputs (a kernel returning a cached output fails), NaN-poisons the outputs the
call writes in place (a kernel that writes nothing, or skips a tail, fails), rejects NaN/Inf, and runs before
the timed loop, on the last timed repetition's own inputs and outputs (a kernel that replays a stored result
fails), and after the timed loop (a kernel right only on its first call fails).

Inputs are evidence: the reference is computed from a pristine copy taken before the call, and every input the
case does not declare as written (``outputs_in_inputs``) or as state (``mutable_inputs``) must be bit-identical
after the call. A kernel that overwrites its inputs fails, naming the tensor, instead of agreeing with a
reference computed from the damage.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .api import Case, CheckResult, FlashRule, Tolerance

# Per-dtype tolerances for elementwise outputs against an fp32/fp64 reference: rounding of the output dtype
# (bf16 keeps 8 bits of mantissa, 2^-8 ≈ 3.9e-3; fp16 11 bits, 2^-11 ≈ 4.9e-4) with room for reordered sums.
# fp16 and bf16 are the tightest every committed record and op test passes (an fp16 RMSNorm gradient over a
# width of 8191 needs 2e-3/4e-3; the fused kernels' bf16 records were gated at 1.6e-2 on both). The one table: benches, the projects' tests and the OSS repros all read it (``tolerance_for``); an output
# that sums over a long axis widens it with ``summed_tolerance``.
TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(atol=1e-10, rtol=1e-10),
    "float32": Tolerance(atol=1e-5, rtol=1e-5),
    "tf32": Tolerance(atol=1e-3, rtol=1e-3),
    "float16": Tolerance(atol=2e-3, rtol=4e-3),
    "bfloat16": Tolerance(atol=1.6e-2, rtol=1.6e-2),
}


def tolerance_for(dtype: Any) -> Tolerance:
    name = str(dtype).replace("torch.", "")
    try:
        return TOLERANCES[name]
    except KeyError:
        raise KeyError(f"no tolerance for dtype {name}; known: {sorted(TOLERANCES)}") from None


def summed_tolerance(dtype: Any, n_terms: int) -> Tolerance:
    """For an output summed over ``n_terms`` rows (a norm's weight gradient): each term carries its inputs'
    rounding, so the error of the sum grows like sqrt(n) while its typical size does too; atol scales, rtol not."""
    base = tolerance_for(dtype)
    return Tolerance(atol=base.atol * 2 * math.sqrt(n_terms), rtol=base.rtol)


# Unit roundoff (round to nearest) of the GEMM ladders' dtypes.
U32 = 2.0**-24
U_BF16 = 2.0**-8  # bf16 keeps 8 significant bits: rounding moves a value by at most 2^-9 relative


def dot_tolerance(K: int, dtype: str) -> Tolerance:
    """|C - ref| <= atol + rtol |ref| for C = A @ B with K-long dot products, inputs ~ N(0, 1), accumulated in
    fp32, against a reference one precision up (fp64 for float32, fp32 with TF32 off for bfloat16).

    float32: each output is a sum of K products; every fp32 FMA rounds the running sum S_i by at most U32 |S_i|,
    and with random signs these errors add like a random walk: std(err) ~ U32 sqrt(sum_i S_i^2). For
    unit-variance products |S_i| ~ sqrt(i), so sum_i S_i^2 ~ K^2 / 2 and std(err) ~ U32 K / sqrt(2) for a plain
    sequential loop (the worst order; blocked sums are smaller).
    - atol = 8 U32 K: > 11 std of that worst order, enough for the maximum over 67M outputs (8192^2: a Gaussian
      maximum sits near 5.7 std). K = 4096: 2.0e-3 against |C| ~ 64.
    - rtol = 8 U32 sqrt(K): the same bound for larger-than-typical outputs (|C| = t sqrt(K) grows the partial
      sums by t).
    A structural bug (one 8-wide K slice dropped or doubled) moves an output by ~sqrt(8) = 2.8, over 1000x atol.

    bfloat16: the output's own rounding dominates.
    - rtol = 2^-8: rounding to bf16 moves a value by at most 2^-9 relative; 2^-8 leaves a factor 2 for the
      reference's own rounding.
    - atol = 2^-8 sqrt(K): entries of C are sums of K unit-variance products, so |C| ~ sqrt(K); this is the
      bf16 rounding of a typical output. It also covers the kernel's and the reference's different fp32
      summation orders, whose difference grows like U32 K (~1e-3 at K = 14336), far below atol. A structural
      bug (one 16-wide K slice lost or doubled) moves an output by ~sqrt(16) = 4 standard units, ten times
      atol even at K = 14336 (atol 0.47).
    """
    if dtype == "float32":
        return Tolerance(atol=8 * U32 * K, rtol=8 * U32 * math.sqrt(K))
    if dtype == "bfloat16":
        return Tolerance(atol=U_BF16 * math.sqrt(K), rtol=U_BF16)
    raise ValueError(f"no K-scaled tolerance for dtype {dtype!r} (float32, bfloat16)")


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
        if not math.isfinite(lowp_err):  # an infinite bound would pass any finite output, garbage included
            return _fail(f"output {i}: PyTorch's same-dtype result is not finite, so the rule gives no bound")
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


def _map_tensors(value: Any, fn) -> Any:
    """``value`` with every tensor inside it (nested lists, tuples, dicts) replaced by ``fn(tensor)``."""
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple takes its fields as arguments
        return type(value)(*(_map_tensors(v, fn) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    return value


def _tensors(value: Any) -> list:
    found: list = []
    _map_tensors(value, lambda t: found.append(t) or t)
    return found


def _pristine_tensor(t):
    copy = t.detach().clone()
    return copy.requires_grad_(True) if t.requires_grad and t.is_leaf else copy


def pristine_copy(case: Case, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``inputs`` taken before the call: the evidence the reference is computed from.

    Output buffers (``outputs_in_inputs``, poisoned, never read by a reference) are shared, not copied; state
    the call may update (``mutable_inputs``) is copied, so the reference sees it as it was before the call."""
    outputs = set(case.outputs_in_inputs)
    return {k: v if k in outputs else _map_tensors(v, _pristine_tensor) for k, v in inputs.items()}


def _same_bits(a, b) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach().reshape(-1).contiguous(), b.detach().reshape(-1).contiguous()
    try:
        import torch

        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    except RuntimeError:  # a dtype that cannot be viewed as bytes
        return bool((a == b).all())


def changed_inputs(case: Case, inputs: Mapping[str, Any], pristine: Mapping[str, Any]) -> list[str]:
    """Names of the inputs that the call changed although the case declares them read-only."""
    writable = set(case.outputs_in_inputs) | set(case.mutable_inputs)
    changed = []
    for name, value in pristine.items():
        if name in writable:
            continue
        now, before = _tensors(inputs.get(name)), _tensors(value)
        if len(now) != len(before) or not all(_same_bits(x, y) for x, y in zip(now, before)):
            changed.append(name)
    return changed


def judge(case: Case, inputs: Mapping[str, Any], pristine: Mapping[str, Any], out: Any) -> dict[str, Any]:
    """Compare one call's outputs with the reference for the inputs it was given (their pristine copy)."""
    changed = changed_inputs(case, inputs, pristine)
    if changed:
        res = _fail(f"the call changed its input(s) {', '.join(changed)}, which the case declares read-only")
        res["reference"] = case.reference_name
        res["detail"]["changed_inputs"] = changed
        return res
    if case.check is not None:
        res: CheckResult = case.check(dict(pristine), out)
        return {"passed": bool(res.passed), "reference": res.reference, "max_abs_err": None, "max_rel_err": None,
                "atol": None, "rtol": None, "checks": [], "detail": dict(res.detail)}
    ref = case.reference(dict(pristine))
    if isinstance(case.tolerance, FlashRule):
        result = compare_flash_rule(out, ref, case.lowp_reference(dict(pristine)), case.tolerance)
    else:
        result = compare(out, ref, case.tolerance)
    result["reference"] = case.reference_name
    return result


def prepare_checked_call(case: Case, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Poison the outputs and take the pristine copy: everything a checked call needs beforehand."""
    poison(inputs, case.outputs_in_inputs)
    return pristine_copy(case, inputs)


def run_check(case: Case, gen: Any, sync=lambda: None) -> dict[str, Any]:
    """One gate pass: fresh inputs from ``gen``, poison, copy, call, compare. Returns the correctness dict."""
    inputs = case.make_inputs(gen)
    pristine = prepare_checked_call(case, inputs)
    out = case.fn(inputs)
    sync()
    return judge(case, inputs, pristine, out)
