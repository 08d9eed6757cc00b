"""Markers resolve to the number, its ratio, GPU and run link; every bad marker fails naming file and line."""
from __future__ import annotations

import pytest
from gpufolio.site import markers as M
from gpufolio.site import records as R

SITE = R.Site("https://github.com/gpufolio/gpufolio")


def ctx(df, page="projects/gemm_ladder.md", charts=None):
    return M.Context(df, page, SITE, chart=charts)


def resolve(df, text, **kw):
    return M.resolve_text(text, "projects/gemm_ladder/README.md", ctx(df, **kw))


def test_result_marker_gives_value_ratio_gpu_and_run_link(df):
    out = resolve(df, "x <!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops "
                      "M=4096 N=4096 K=4096 --> y")
    assert out == ('x **37.4 TFLOP/s** (0.75× cuBLAS <span class="gf-badge gf-loses">slower</span>, NVIDIA H200, '
                   "[run 2026-12-01](../runs.md#run-20261201t101500z-a1a1a1)) y")


def test_result_marker_link_is_relative_to_the_page(df):
    out = M.resolve_text("<!-- result: project=gemm_ladder bench=bf16_gemm variant=cublas metric=tflops M=8192 -->",
                         "worklog/x.md", ctx(df, page="worklog/posts/x.md"))
    assert "](../../runs.md#run-20261201t101500z-a1a1a1)" in out and "the baseline" in out


def test_extra_metric_and_stale_badge(df):
    out = resolve(df, "<!-- result: project=fsdp_mfu bench=train_step variant=fsdp2 metric=mfu B=8 -->")
    assert out.startswith("**57.6 %** (0.97× single_compile")
    stale = resolve(df, "<!-- result: project=flash_attention bench=attention_fwd variant=03_tiled metric=tflops S=4096 -->")
    assert "gf-stale" in stale


def test_run_pin_selects_the_other_gpu_run(df):
    out = resolve(df, "<!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops M=4096 "
                      "run=20261130T080000Z-c3c3c3 -->")
    assert "NVIDIA A100-SXM4-80GB" in out and "0.70× cuBLAS" in out


def test_dirty_only_match_is_shown_with_its_reason(df):
    # a pinned dirty run still resolves, but says it is not counted
    out = resolve(df, "<!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops M=4096 "
                      "run=20261202T091500Z-b2b2b2 -->")
    assert "dirty tree" in out


@pytest.mark.parametrize("text, message", [
    ("<!-- result: project=nope bench=sgemm variant=a metric=tflops -->", "unknown project 'nope'"),
    ("<!-- result: project=gemm_ladder bench=hgemm variant=a metric=tflops -->", "unknown bench 'hgemm'"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=99_magic metric=tflops -->", "unknown variant '99_magic'"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=cublas metric=gflops -->", "unknown metric 'gflops'"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=cublas metric=tflops M=123 -->", "no ok record"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=08_buggy metric=tflops -->", "no ok record"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=cublas metric=tflops -->", "ambiguous: 3 configs"),
    ("<!-- result: project=oss_pr_notes bench=x variant=y metric=z -->", "has no records yet"),
    ("<!-- result: project=gemm_ladder bench=sgemm metric=tflops -->", "needs variant"),
    ("<!-- results-tabel: project=gemm_ladder bench=sgemm -->", "unknown marker 'results-tabel'"),
    ("<!-- results-table: project=gemm_ladder bench=sgemm M -->", "expected key=value"),
    ("<!-- results-table: project=gemm_ladder bench=sgemm run=20990101T000000Z-ffffff -->", "no run"),
    ("<!-- results-chart: project=gemm_ladder bench=sgemm x=Q -->", "x=Q is not a param"),
    ("<!-- result: project=gemm_ladder bench=sgemm\n  variant=cublas metric=tflops -->", "on one line"),
])
def test_bad_markers_fail_with_file_and_line(df, text, message):
    with pytest.raises(M.MarkerError) as e:
        resolve(df, "# Title\n\nSome prose.\n" + text)
    assert str(e.value).startswith("projects/gemm_ladder/README.md:4: "), str(e.value)
    assert message in str(e.value)


def test_markers_in_code_are_left_alone(df):
    text = ("```markdown\n<!-- result: project=nope bench=x variant=y metric=z -->\n```\n"
            "inline `<!-- result: project=nope bench=x variant=y metric=z -->` stays\n")
    assert resolve(df, text) == text


def test_results_table_marker(df):
    out = resolve(df, "<!-- results-table: project=gemm_ladder bench=sgemm -->")
    lines = out.splitlines()
    assert lines[0] == "| Variant | K=1024, M=1024, N=1024 | K=2048, M=2048, N=2048 | K=4096, M=4096, N=4096 |"
    assert any(line.startswith("| 8 broken on purpose |") and "failed correctness check" in line for line in lines)
    assert any(line.startswith("| cuBLAS *(baseline)* |") for line in lines)
    assert "NVIDIA H200" in out and "dtype=float32" in out


def test_results_table_filters(df):
    out = resolve(df, "<!-- results-table: project=gemm_ladder bench=sgemm M=2048 -->")
    assert "K=2048" in out.splitlines()[0] and "4096" not in out.splitlines()[0]


def test_results_chart_marker_asks_for_a_chart(df):
    calls = []

    def chart(marker, run, x):
        calls.append((marker.args["bench"], x, run.run_id.unique().tolist()))
        return "generated/charts/c.png"

    out = resolve(df, "<!-- results-chart: project=gemm_ladder bench=sgemm -->", charts=chart)
    assert calls == [("sgemm", "M", ["20261201T101500Z-a1a1a1"])]
    assert out.startswith("![tflops of each sgemm variant against M, NVIDIA H200](../generated/charts/c.png)")


def test_all_errors_mode_collects_every_bad_marker_in_order(df):
    c = ctx(df)
    c.errors = []
    text = ("<!-- result: project=nope bench=x variant=y metric=z -->\n"
            "<!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops M=4096 -->\n"
            "<!-- results-table: project=gemm_ladder bench=nope -->\n")
    out = M.resolve_text(text, "w.md", c)
    assert [e.split(": ")[0] for e in c.errors] == ["w.md:1", "w.md:3"]
    assert out.splitlines()[0] == "**unresolved marker**" and "37.4 TFLOP/s" in out.splitlines()[1]
