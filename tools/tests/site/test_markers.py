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


def test_a_pinned_record_that_does_not_count_fails_instead_of_showing(df):
    # a dirty run named outright is still never a number on the page
    with pytest.raises(M.MarkerError, match=r"README.md:1: .*does not count \(dirty tree\)"):
        resolve(df, "<!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops M=4096 "
                    "run=20261202T091500Z-b2b2b2 -->")


@pytest.mark.parametrize("text, message", [
    ("<!-- result: project=nope bench=sgemm variant=a metric=tflops -->", "unknown project 'nope'"),
    ("<!-- result: project=gemm_ladder bench=hgemm variant=a metric=tflops -->", "unknown bench 'hgemm'"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=99_magic metric=tflops -->", "unknown variant '99_magic'"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=cublas metric=gflops -->", "unknown metric 'gflops'"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=cublas metric=tflops M=123 -->", "no counted record"),
    ("<!-- result: project=gemm_ladder bench=sgemm variant=08_buggy metric=tflops -->", "no counted record"),
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


# ---- which run a marker reads -------------------------------------------------------------------------------

DATED = "---\ndate: 2026-12-02\n{runs}---\n\n# An entry\n\n{body}\n"
SGEMM = "<!-- result: project=gemm_ladder bench=sgemm variant=07_vectorize metric=tflops M=4096 {pin}-->"


def test_a_floating_marker_in_a_dated_entry_fails_with_file_and_line(df):
    text = DATED.format(runs="", body="It ran at " + SGEMM.format(pin="") + ".")
    with pytest.raises(M.MarkerError) as e:
        M.resolve_text(text, "worklog/2026-12-02-x.md", ctx(df, page="worklog/posts/2026-12-02-x.md"))
    assert str(e.value).startswith("worklog/2026-12-02-x.md:7: a dated entry's numbers never change")


def test_a_dated_entry_reads_the_runs_its_front_matter_names(mixed_df):
    # d5d5d5 is newer and clean; the entry names a1a1a1, so it shows a1a1a1's number, today and after any rerun
    text = DATED.format(runs="runs:\n  gemm_ladder: 20261201T101500Z-a1a1a1\n", body=SGEMM.format(pin=""))
    out = M.resolve_text(text, "worklog/x.md", ctx(mixed_df, page="worklog/posts/x.md"))
    assert "**37.4 TFLOP/s**" in out and "run-20261201t101500z-a1a1a1" in out
    pinned = DATED.format(runs="runs:\n  gemm_ladder: 20261201T101500Z-a1a1a1\n",
                          body=SGEMM.format(pin="run=20261202T120000Z-d5d5d5 "))
    assert "run-20261202t120000z-d5d5d5" in M.resolve_text(pinned, "worklog/x.md", ctx(mixed_df, page="worklog/posts/x.md"))


def test_front_matter_naming_a_run_the_bench_lacks_fails(df):
    text = DATED.format(runs="runs:\n  gemm_ladder: 20261130T080000Z-ffffff\n", body=SGEMM.format(pin=""))
    with pytest.raises(M.MarkerError, match=r"x.md:9: no run '20261130T080000Z-ffffff' .*front matter"):
        M.resolve_text(text, "x.md", ctx(df))


def test_a_readme_section_prefers_the_newest_run_that_holds_the_baseline(mixed_df):
    # d5d5d5 (newer) has 07_vectorize but no cuBLAS: the section reads a1a1a1, which has both
    out = resolve(mixed_df, "## Results\n\n" + SGEMM.format(pin=""))
    assert "0.75× cuBLAS" in out and "run-20261201t101500z-a1a1a1" in out


def test_a_section_never_mixes_runs(mixed_df):
    only_new = "<!-- result: project=gemm_ladder bench=sgemm variant=11_only_here metric=tflops M=4096 -->"
    only_old = "<!-- result: project=gemm_ladder bench=sgemm variant=01_naive metric=tflops M=4096 -->"
    # each alone resolves (to different runs); in one section they would mix runs, so the build fails
    assert "d5d5d5" in resolve(mixed_df, only_new) and "a1a1a1" in resolve(mixed_df, only_old)
    with pytest.raises(M.MarkerError, match=r"README.md:3: the 2 markers of gemm_ladder in section 'Mixed' "
                                            r"resolve in no single run"):
        resolve(mixed_df, f"## Mixed\n\n{only_new} and {only_old}")
    # under two headings they are two sections, each with its own run
    out = resolve(mixed_df, f"## New\n\n{only_new}\n\n## Old\n\n{only_old}")
    assert "d5d5d5" in out and "a1a1a1" in out


def test_every_marker_of_a_section_reads_one_run(mixed_df):
    # 07_vectorize alone would prefer a1a1a1 (baseline), 11_only_here exists only in d5d5d5: the section has one
    # run that holds both (d5d5d5), and both numbers say so
    text = ("## One paragraph\n\n" + SGEMM.format(pin="") + " and "
            "<!-- result: project=gemm_ladder bench=sgemm variant=11_only_here metric=tflops M=4096 -->")
    out = resolve(mixed_df, text)
    assert out.count("run-20261202t120000z-d5d5d5") == 2 and "a1a1a1" not in out
    assert "no cublas in this run" in out


def test_front_matter_may_name_one_run_per_bench(df):
    runs = "runs:\n  gemm_ladder: [20261130T080000Z-c3c3c3, 20261202T091500Z-b2b2b2, 20261201T101500Z-a1a1a1]\n"
    bf16 = "<!-- result: project=gemm_ladder bench=bf16_gemm variant=07_vectorize metric=tflops M=8192 -->"
    out = M.resolve_text(DATED.format(runs=runs, body=bf16), "x.md", ctx(df))
    assert "run-20261201t101500z-a1a1a1" in out  # the only named run that holds bf16_gemm
    with pytest.raises(M.MarkerError, match=r"x.md:9: 3 of the runs the front matter names .* hold sgemm"):
        M.resolve_text(DATED.format(runs=runs, body=SGEMM.format(pin="")), "x.md", ctx(df))


def test_sections_are_told_apart_by_place_not_by_heading_text(mixed_df):
    only_new = "<!-- result: project=gemm_ladder bench=sgemm variant=11_only_here metric=tflops M=4096 -->"
    only_old = "<!-- result: project=gemm_ladder bench=sgemm variant=01_naive metric=tflops M=4096 -->"
    out = resolve(mixed_df, f"## Notes\n\n{only_new}\n\n## Notes\n\n{only_old}")
    assert "d5d5d5" in out and "a1a1a1" in out


def test_all_errors_lists_pin_and_name_errors_in_line_order(df):
    c = ctx(df)
    c.errors = []
    text = DATED.format(runs="", body="<!-- results-table: project=gemm_ladder bench=nope run=x -->\n"
                                      + SGEMM.format(pin=""))
    M.resolve_text(text, "w.md", c)
    assert [e.split(": ")[0] for e in c.errors] == ["w.md:7", "w.md:8"]
