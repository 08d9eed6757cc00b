"""The comparison rules of the correctness gate."""
import math

import pytest

torch = pytest.importorskip("torch")

from gpufolio.api import Case, FlashRule, Tolerance, Work  # noqa: E402
from gpufolio.check import compare, compare_flash_rule, poison, summed_tolerance, tolerance_for  # noqa: E402


def test_compare_passes_within_tolerance_and_reports_errors():
    ref = torch.randn(100, dtype=torch.float64)
    out = (ref + 1e-7).float()
    r = compare(out, ref, Tolerance(1e-6, 1e-6))
    assert r["passed"] and r["max_abs_err"] < 1e-6


def test_compare_fails_on_nan_inf_and_shape():
    ref = torch.ones(4, dtype=torch.float64)
    assert not compare(torch.tensor([1.0, float("nan"), 1, 1]), ref, Tolerance(1, 1))["passed"]
    assert not compare(torch.tensor([1.0, float("inf"), 1, 1]), ref, Tolerance(1, 1))["passed"]
    r = compare(torch.ones(5), ref, Tolerance(1, 1))
    assert not r["passed"] and "shape" in r["detail"]["error"]


def test_compare_tuple_outputs_and_per_output_tolerance():
    ref = (torch.zeros(3, dtype=torch.float64) + 1, torch.zeros(3, dtype=torch.float64) + 2)
    out = (torch.ones(3) + 0.05, torch.ones(3) * 2)
    assert not compare(out, ref, Tolerance(1e-3, 0))["passed"]
    assert compare(out, ref, {0: Tolerance(0.1, 0), 1: Tolerance(1e-3, 0)})["passed"]


def test_flash_rule_is_relative_to_pytorch_own_error():
    ref = torch.randn(64, dtype=torch.float64)
    lowp = ref + 1e-3
    assert compare_flash_rule(ref + 1.5e-3, ref, lowp, FlashRule(2.0, 0.0))["passed"]
    assert not compare_flash_rule(ref + 3e-3, ref, lowp, FlashRule(2.0, 0.0))["passed"]


def test_flash_rule_without_a_finite_same_dtype_result_fails_instead_of_passing_anything():
    ref = torch.randn(64, dtype=torch.float64)
    lowp = ref.clone()
    lowp[3] = float("inf")  # PyTorch's own low-precision result overflowed
    r = compare_flash_rule(ref + 100.0, ref, lowp, FlashRule(2.0, 0.0))
    assert not r["passed"] and "not finite" in r["detail"]["error"]


def test_poison_fills_outputs():
    inp = {"out": torch.zeros(3), "idx": torch.zeros(3, dtype=torch.int32)}
    poison(inp, ["out", "idx"])
    assert torch.isnan(inp["out"]).all() and (inp["idx"] == torch.iinfo(torch.int32).max).all()
    with pytest.raises(KeyError):
        poison(inp, ["missing"])


def test_tolerance_table_has_every_dtype_we_bench():
    for dt in (torch.float32, torch.float16, torch.bfloat16, "tf32"):
        t = tolerance_for(dt)
        assert 0 < t.rtol < 0.05 and math.isfinite(t.atol)
    with pytest.raises(KeyError):
        tolerance_for("int8")


def test_a_sum_over_n_rows_widens_atol_by_2_sqrt_n_and_keeps_rtol():
    base, summed = tolerance_for("bfloat16"), summed_tolerance("bfloat16", 4096)
    assert summed.atol == pytest.approx(base.atol * 2 * 64) and summed.rtol == base.rtol


def test_case_requires_a_way_to_check():
    with pytest.raises(ValueError):
        Case(fn=lambda i: i, make_inputs=lambda g: {}, work=Work())
    with pytest.raises(ValueError):
        Case(fn=lambda i: i, make_inputs=lambda g: {}, work=Work(), reference=lambda i: i, tolerance=FlashRule())
