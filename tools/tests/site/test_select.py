"""Headline selection and the honesty guards, on the hand-made fixture store (make_site_fixtures.py says what each
fixture record is for)."""
from __future__ import annotations

import pytest
from gpufolio.site import records as R
from gpufolio.site import select as S


def test_every_record_gets_the_reason_it_is_not_counted(df):
    view = R.records_view(df).set_index(["run_id", "variant", "bench"])
    assert view.loc[("20261201T101500Z-a1a1a1", "08_buggy", "sgemm")].reason == "failed correctness check"
    assert view.loc[("20261202T091500Z-b2b2b2", "07_vectorize", "sgemm")].reason == "dirty tree"
    assert view.loc[("20261202T080000Z-f7f7f7", "fsdp2", "train_step")].reason == "unknown commit"
    assert view.loc[("20261202T100000Z-a8a8a8", "engine", "decode_b1")].reason == "dry run (CPU, tiny sizes)"
    assert view.loc[("20261201T130000Z-e5e5e5", "liger", "rmsnorm")].reason == "out of memory"
    assert view.loc[("20261201T101500Z-a1a1a1", "cublas", "sgemm")].reason.tolist() == [None] * 3


def test_reason_rules_one_by_one():
    ok = {"status": "ok", "correctness_passed": True, "git_sha": "f" * 40, "git_dirty": False,
          "gpu_name": "NVIDIA H200"}
    assert R.reason_not_counted(ok) is None
    assert R.reason_not_counted({**ok, "status": "dry_run"}) == "dry run (CPU, tiny sizes)"
    assert R.reason_not_counted({**ok, "gpu_name": "NVIDIA A100-SXM4-80GB"}) == "another GPU model (NVIDIA A100-SXM4-80GB)"
    assert R.reason_not_counted({**ok, "gpu_name": "NVIDIA A100-SXM4-80GB"}, gpu="NVIDIA A100-SXM4-80GB") is None
    assert R.reason_not_counted({**ok, "status": "timeout"}) == "timed out"
    assert R.reason_not_counted({**ok, "status": "error"}) == "error"
    assert R.reason_not_counted({**ok, "git_sha": "abc1234"}) == "unknown commit"  # a short SHA is not enough
    assert R.reason_not_counted({**ok, "git_dirty": None}) == "tree state unknown"
    assert R.reason_not_counted({**ok, "correctness_passed": None}) == "correctness not checked"
    assert R.reason_not_counted({**ok, "gpu_name": None}) == "no GPU recorded"


def test_dirty_newer_run_never_becomes_the_headline(df):
    h = S.bench_headline(df, "gemm_ladder", "sgemm")
    # the dirty run (b2b2b2) is newer and faster; the headline stays on the clean run
    assert h.candidate["run_id"] == "20261201T101500Z-a1a1a1"
    assert h.candidate["variant"] == "07_vectorize"  # 08_buggy is faster but failed its check


def test_losing_candidate_is_the_headline_and_is_shown_losing(df):
    h = S.bench_headline(df, "gemm_ladder", "sgemm")
    assert h.baseline["variant"] == "cublas"
    assert h.ratio == pytest.approx(37.35 / 49.8, rel=1e-3)
    assert h.loses


def test_baseline_is_same_run_same_params_same_gpu(df):
    for p in R.projects():
        for h in S.project_headlines(df, p):
            if h.baseline is None:
                continue
            for key in ("run_id", "params_key", "gpu_name"):
                assert h.candidate[key] == h.baseline[key], (p, h.bench, key)


def test_other_gpu_model_is_never_mixed_in(df):
    # the A100 run is clean and older: not the headline, and never the baseline of an H200 candidate
    h = S.bench_headline(df, "gemm_ladder", "sgemm")
    assert h.candidate["gpu_name"] == "NVIDIA H200" and h.baseline["gpu_name"] == "NVIDIA H200"


def test_stale_record_is_counted_and_flagged(df):
    h = S.bench_headline(df, "flash_attention", "attention_fwd")
    assert h.stale
    assert not S.bench_headline(df, "gemm_ladder", "sgemm").stale


def test_lower_is_better_ratio_orientation():
    assert R.speedup(2.0, 4.0, higher_is_better=False) == 2.0
    assert R.speedup(4.0, 2.0, higher_is_better=True) == 2.0
    assert R.speedup(0.0, 2.0, True) is None


def test_home_headline_has_one_row_per_project_and_none_for_unmeasured(df):
    assert S.home_headline(df, "gemm_ladder").bench == "bf16_gemm"  # its project.py's HOME_BENCHES prefer it
    assert S.home_headline(df, "oss_pr_notes") is None


def test_not_counted_lists_each_record_once_newest_first(df):
    nc = S.not_counted(df)
    assert len(nc) == 8  # 6 unsound records, and the A100 run's 2 (sound, but another GPU model)
    assert (nc.reason == "another GPU model (NVIDIA A100-SXM4-80GB)").sum() == 2
    assert nc.created_at.is_monotonic_decreasing
    assert set(nc.status) == {"ok", "failed_correctness", "dry_run", "oom"}


def test_params_match_normalises_types():
    assert R.params_match({"M": 4096, "causal": False}, {"M": "4096", "causal": "false"})
    assert R.params_match({"lr": 0.5}, {"lr": "0.50"})
    assert not R.params_match({"M": 4096}, {"M": "2048"})
    assert not R.params_match({"M": 4096}, {"N": "4096"})


def test_fmt_value_keeps_three_figures_without_exponents():
    assert [R.fmt_value(v) for v in (0.0123, 1.234, 12.34, 123.4, 12345.6)] == ["0.0123", "1.23", "12.3", "123", "12,346"]


def test_fastest_baseline_is_named_when_it_is_not_the_headline_baseline(df):
    h = S.bench_headline(df, "flash_attention", "attention_fwd")
    assert h.baseline["variant"] == "sdpa_flash"
    assert h.best_baseline["variant"] == "sdpa_cudnn"
    assert h.best_ratio == pytest.approx(300 / 640, rel=1e-3) and h.loses_to_best
    # when the headline baseline is also the fastest one, nothing extra is shown
    assert S.bench_headline(df, "fused_kernels", "rmsnorm").best_baseline is None
