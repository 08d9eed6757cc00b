"""One "counts" verdict wherever a number appears, and a roofline place on every headline, on the fixture store
plus what used to leak (``mixed_df``: another GPU model inside an H200 run and in a newer complete run, a dirty
record inside a clean run; see make_site_fixtures.mixed_records)."""
from __future__ import annotations

import pandas as pd
import pytest
from gpufolio.site import markers as M
from gpufolio.site import readme
from gpufolio.site import records as R
from gpufolio.site import roofline as RL
from gpufolio.site import select as S
from gpufolio.site import tables as T

SITE = R.Site("https://github.com/gpufolio/gpufolio")
A100 = "NVIDIA A100-SXM4-80GB"
LEAKS = ("10_elsewhere", "09_dirty")  # never a number on an H200 page


def marker_ctx(df, page="projects/gemm_ladder.md", chart=None):
    return M.Context(df, page, SITE, chart=chart)


def test_counts_is_sound_and_on_the_portfolio_gpu(mixed_df):
    view = R.records_view(mixed_df).set_index(["run_id", "variant", "bench"])
    assert R.portfolio_gpu() == "NVIDIA H200"
    assert view.loc[("20261201T101500Z-a1a1a1", "10_elsewhere", "sgemm")].reason == f"another GPU model ({A100})"
    assert view.loc[("20261201T101500Z-a1a1a1", "09_dirty", "sgemm")].reason == "dirty tree"
    assert view.loc[("20261202T100000Z-a8a8a8", "engine", "decode_b1")].reason == "dry run (CPU, tiny sizes)"
    assert bool(view.loc[("20261201T101500Z-a1a1a1", "07_vectorize", "sgemm")].counts.all())
    # what counts is exactly: status ok, correct, full SHA, clean tree, the portfolio's GPU model
    counted = R.records_view(mixed_df)[R.records_view(mixed_df).counts.astype(bool)]
    assert set(counted.status) == {"ok"} and counted.correctness_passed.all() and not counted.git_dirty.any()
    assert set(counted.gpu_name) == {"NVIDIA H200"} and counted.git_sha.str.fullmatch(r"[0-9a-f]{40}").all()


def test_a_newer_complete_run_on_another_gpu_is_not_the_headline(mixed_df):
    h = S.home_headline(mixed_df, "gemm_ladder")
    assert h.bench == "bf16_gemm" and h.candidate["run_id"] == "20261201T101500Z-a1a1a1"
    assert h.candidate["gpu_name"] == h.baseline["gpu_name"] == "NVIDIA H200"
    assert "2,000" not in T.home_table(mixed_df, SITE) and "2,000" not in readme.headline_table(mixed_df, SITE)


def test_another_gpu_gets_its_own_section_with_its_own_baselines(mixed_df):
    assert S.other_gpus(mixed_df, "gemm_ladder") == [A100]
    h = S.bench_headline(mixed_df, "gemm_ladder", "bf16_gemm", gpu=A100)
    assert h.candidate["gpu_name"] == h.baseline["gpu_name"] == A100 and h.ratio == pytest.approx(2000 / 1500, rel=1e-4)
    text = "\n".join(T.other_gpu_sections(mixed_df, "gemm_ladder", SITE, "projects/gemm_ladder.md"))
    assert text.startswith(f"## On {A100}\n") and "never with the NVIDIA H200 numbers" in text
    assert "**1.33×** cuBLAS" in text
    # and the portfolio's own headline table holds no A100 number
    assert A100 not in T.headline_table(mixed_df, "gemm_ladder", SITE, "projects/gemm_ladder.md")


def test_the_headline_never_picks_a_leak(mixed_df):
    h = S.bench_headline(mixed_df, "gemm_ladder", "sgemm")
    assert h.candidate["variant"] == "07_vectorize"  # 10_elsewhere and 09_dirty are faster and do not count


def test_variant_table_shows_why_instead_of_a_number(mixed_df):
    run = S.latest_run(mixed_df, "gemm_ladder", "sgemm", {"M": 4096})
    assert run.run_id.unique().tolist() == ["20261202T120000Z-d5d5d5"]  # newest with a counted record
    run = S.latest_run(mixed_df, "gemm_ladder", "sgemm", run_id="20261201T101500Z-a1a1a1")
    lines = T.variant_table(run, marker_ctx(mixed_df)).splitlines()
    by_label = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:] if line.startswith("|")}
    assert f"another GPU model ({A100})" in by_label["10_elsewhere"] and "](" not in by_label["10_elsewhere"]
    assert "dirty tree" in by_label["09_dirty"] and "](" not in by_label["09_dirty"]
    assert "failed correctness check" in by_label["8 broken on purpose"]
    assert "NVIDIA H200, [run 20261201T101500Z-a1a1a1]" in lines[-1]


def test_charts_draw_only_records_that_count(mixed_df, tmp_path):
    from gpufolio.site.context import RenderCtx

    ctx = RenderCtx(mixed_df, SITE, tmp_path, tmp_path)
    text = "<!-- results-chart: project=gemm_ladder bench=sgemm M=4096 run=20261201T101500Z-a1a1a1 -->"
    M.resolve_text(text, "x.md", ctx.marker_ctx("projects/gemm_ladder.md"))
    (_, _, _, args), = ctx.jobs
    drawn = args[0]
    assert set(drawn.variant) == {"01_naive", "05_blocktiling_2d", "07_vectorize", "cublas"}


def test_headline_chart_rows_count(mixed_df, tmp_path):
    from gpufolio.site import project
    from gpufolio.site.context import RenderCtx

    ctx = RenderCtx(mixed_df, SITE, tmp_path, tmp_path)
    project._headline_chart(ctx, S.bench_headline(mixed_df, "gemm_ladder", "sgemm"), "projects/gemm_ladder.md")
    (_, _, _, args), = ctx.jobs
    assert not set(args[0].variant) & set(LEAKS)


@pytest.mark.parametrize("variant, why", [("10_elsewhere", "another GPU model"), ("09_dirty", "dirty tree"),
                                          ("08_buggy", "no ok record")])
def test_prose_never_quotes_a_record_that_does_not_count(mixed_df, variant, why):
    text = (f"<!-- result: project=gemm_ladder bench=sgemm variant={variant} metric=tflops M=4096 "
            "run=20261201T101500Z-a1a1a1 -->")
    with pytest.raises(M.MarkerError, match=why):
        M.resolve_text(text, "README.md", marker_ctx(mixed_df))
    floating = text.replace(" run=20261201T101500Z-a1a1a1", "")
    with pytest.raises(M.MarkerError, match="no counted record"):
        M.resolve_text(floating, "README.md", marker_ctx(mixed_df))


def test_a_pinned_run_of_another_gpu_is_read_on_that_gpu(df):
    out = M.resolve_text("<!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops M=4096 "
                         "run=20261130T080000Z-c3c3c3 -->", "README.md", marker_ctx(df))
    assert A100 in out and "0.70× cuBLAS" in out  # its own cuBLAS, never the H200's


def test_dry_runs_are_never_headlines(df):
    h = S.bench_headline(df, "inference_engine", "decode_b1")
    assert h.candidate["run_id"] == "20261201T150000Z-a7a7a7"


# ---- roofline ---------------------------------------------------------------------------------------------------

def _row(unit, value, params, ceilings, work=None, ms=1.0, gpu="NVIDIA H200"):
    return {"metric_unit": unit, "value": value, "params": params, "median_ms": ms, "gpu_name": gpu,
            "record": {"env": {"ceilings": ceilings}, "work": work or {}}}


CEIL = {"copy_gbps": 4000.0, "bf16_tflops": 700.0, "fp32_tflops": 50.0}


def test_roofline_wording_is_one_sentence_shape_for_every_bound():
    mem = RL.text(RL.place(_row("GB/s", 3000.0, {"dtype": "bfloat16"}, CEIL)))
    assert mem == ("75% of measured copy bandwidth (4,000 GB/s) · 62% of datasheet HBM bandwidth (4,800 GB/s)")
    bf16 = RL.text(RL.place(_row("TFLOP/s", 350.0, {"dtype": "bfloat16"}, CEIL)))
    assert bf16 == "50% of measured cuBLAS bf16 (700 TFLOP/s) · 35% of datasheet bf16 dense peak (989 TFLOP/s)"
    fp32 = RL.text(RL.place(_row("TFLOP/s", 40.0, {"dtype": "float32"}, CEIL)))
    assert fp32 == "80% of measured cuBLAS fp32 (50.0 TFLOP/s) · 60% of datasheet fp32 peak (67.0 TFLOP/s)"


def test_a_headline_above_its_stamped_ceiling_is_never_a_percentage_over_100():
    over = RL.text(RL.place(_row("TFLOP/s", 740.0, {"dtype": "bfloat16"}, CEIL)))
    assert "%" not in over.split(" · ")[0] and "above the run's stamped cuBLAS bf16 (700 TFLOP/s)" in over


def test_roofline_from_work_when_the_metric_is_not_a_rate():
    # tok/s of a decode step: bytes counted -> bandwidth; a training step: FLOPs counted -> compute
    decode = RL.place(_row("tok/s", 1250.0, {}, CEIL, {"bytes": 3.0e9}, ms=1.0))
    assert decode.bound == "memory" and decode.achieved == pytest.approx(3000.0)
    train = RL.place(_row("tok/s", 9e4, {"dtype": "bfloat16"}, CEIL, {"flops": 3.5e14}, ms=1000.0))
    assert train.bound == "bf16" and train.measured_pct == pytest.approx(50.0)
    assert RL.text(RL.place(_row("tok/s", 1.0, {}, CEIL, {"tokens": 5}))).startswith("no roofline")
    other = RL.text(RL.place(_row("GB/s", 1000.0, {}, None, gpu=A100)))
    assert other == f"measured copy bandwidth not stamped · no datasheet for {A100}"


def test_every_headline_has_a_roofline_place_on_every_table(df):
    home = T.home_table(df, SITE)
    project = T.headline_table(df, "fused_kernels", SITE, "projects/fused_kernels.md")
    table = readme.headline_table(df, SITE)
    for text in (home, project, table):
        assert "of measured copy bandwidth (4,160 GB/s) · " in text  # the fixture's rmsnorm, named the same way
    assert "of measured cuBLAS bf16 (767 TFLOP/s) · " in home  # the fixture's bf16 GEMM
    assert "[" in project.split("of measured copy bandwidth")[0].rsplit("|", 1)[1]  # links to the ceilings table
    assert "index.md#ceilings" in project


def test_one_ceilings_table_per_gpu(mixed_df):
    text = T.ceilings_section(mixed_df)
    assert text.startswith("## Hardware ceilings {#ceilings}")
    assert text.count("\n### NVIDIA H200\n") == 1 and text.count(f"\n### {A100}\n") == 1
    assert "| NVIDIA H200 datasheet | 4,800 | 989 | 67.0 |" in text
    assert "every run on this GPU" in text


def test_charts_and_roofline_read_the_same_datasheet():
    from gpufolio.site import charts

    assert charts.DATASHEET is RL.DATASHEETS["NVIDIA H200"]


def test_counted_filters_on_the_verdict_not_on_status(mixed_df):
    ok = mixed_df[mixed_df.status == "ok"]
    assert len(R.counted(ok)) < len(ok)
    assert isinstance(R.counted(pd.DataFrame()), pd.DataFrame)


def test_reason_and_counts_are_one_verdict(mixed_df):
    # the notebook and the not-counted page read ``reason``; tables, charts and headlines ``counted``: the same rows
    assert (mixed_df.reason.isna() == mixed_df.counts.astype(bool)).all()
    assert R.counted(mixed_df).index.equals(mixed_df[mixed_df.counts.astype(bool)].index)


def test_variant_table_marks_a_noisy_number(mixed_df):
    run = S.latest_run(mixed_df, "gemm_ladder", "sgemm", run_id="20261201T101500Z-a1a1a1").copy()
    quiet = T.variant_table(run, marker_ctx(mixed_df))
    assert "gf-wide-band" not in quiet and "a noisy number" not in quiet
    i = run.index[run.variant.eq("07_vectorize") & run.is_headline_metric.astype(bool)][0]
    run.loc[i, "p80_ms"] = run.loc[i, "p20_ms"] + 0.4 * run.loc[i, "median_ms"]  # a band 40% of the median wide
    lines = T.variant_table(run, marker_ctx(mixed_df)).splitlines()
    by_label = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:] if line.startswith("|")}
    assert "±20%" in by_label[run.loc[i, "label"]] and "a noisy number" in lines[-1]
    assert sum("gf-wide-band" in line for line in lines) == 1
