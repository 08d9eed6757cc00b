"""The history pages and the regressions page: which runs are points, what is a regression, what the pages say."""
import pytest
import yaml
from gpufolio import store
from gpufolio.site import history as H
from gpufolio.site import records as R
from gpufolio.site.context import RenderCtx
from made_records import H200, rec

SITE = R.Site("https://github.com/gpufolio/gpufolio")


def run(n, cand_ms, base_ms, **kw):
    """Run n (day n of December): the candidate and the headline baseline at the headline params."""
    run_id, created, sha = f"2026120{n}T100000Z-00000{n}", f"2026-12-0{n}T10:00:00+00:00", str(n) * 40
    return [rec(run_id, "fused", cand_ms, created=created, sha=sha, **kw),
            rec(run_id, "eager", base_ms, created=created, sha=sha, **kw)]


def frame(records):
    return R.prepare(store.frame(records), lambda project, git: False)


STORE = [
    *run(1, 1.00, 2.0),
    *run(2, 1.20, 2.0),  # candidate 20 % slower, baseline unchanged: a regression
    *run(3, 1.44, 2.4),  # both 20 % slower: the card, not the code
    *run(4, 1.45, 2.4),  # within noise
    *run(5, 0.50, 2.4),  # faster
]


def test_regression_needs_the_slowdown_beyond_noise_and_not_shared_by_the_baseline():
    regs = H.regressions(H.points(frame(STORE)))
    assert list(regs.run_id) == ["20261202T100000Z-000002"]
    r = regs.iloc[0]
    assert r.prev_run == "20261201T100000Z-000001" and r.variant == "fused"
    assert r.time_change == pytest.approx(0.2) and r.vs_base_change == pytest.approx(1 / 1.2 - 1)


def test_a_baseline_is_never_a_regression():
    regs = H.regressions(H.points(frame([*run(1, 1.0, 2.0), *run(2, 1.0, 3.0)])))
    assert regs.empty


def test_only_counted_runs_are_points():
    other = dict(H200, name="NVIDIA A100-SXM4-80GB")
    records = [*run(1, 1.0, 2.0), *run(2, 9.0, 2.0, gpu=other), *run(3, 9.0, 2.0, status="dry_run", gpu=None)]
    dirty = run(4, 9.0, 2.0)
    for r in dirty:
        r["git"]["dirty"] = True
    pts = H.points(frame(records + dirty))
    assert sorted(pts.run_id.unique()) == ["20261201T100000Z-000001"]
    assert H.regressions(pts).empty  # the slow runs on another GPU, dry or dirty are not compared


def test_a_project_page_opens_with_its_regressions():
    regs = H.regressions(H.points(frame(STORE)))
    note = "\n".join(H.project_note(regs, "projects/fused_kernels/index.md"))
    assert note.startswith('!!! warning "1 regression beyond noise"')
    assert "+20.0 % median time, run 20261201T100000Z-000001 to 20261202T100000Z-000002" in note
    assert "](../../regressions.md)" in note
    assert H.project_note(H.regressions(H.points(frame(run(1, 1.0, 2.0)))), "x.md") == []


@pytest.fixture
def pages(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / ".nav.yml").write_text(yaml.safe_dump([{"Home": "index.md"}, {"Runs": "runs.md"}]), encoding="utf-8")
    ctx = RenderCtx(frame(STORE), SITE, docs, tmp_path)
    written = H.render(ctx)
    return docs, ctx, written


def test_regressions_page_lists_each_regression_with_both_commits(pages):
    docs, _, written = pages
    assert "regressions.md" in written
    text = (docs / "regressions.md").read_text(encoding="utf-8")
    assert "1 regression, newest first." in text
    row = next(line for line in text.splitlines() if line.startswith("| [Fused kernels]"))
    assert "commit/" + "1" * 40 in row and "commit/" + "2" * 40 in row and "+20.0 %" in row
    assert "runs.md#run-20261202t100000z-000002" in row


def test_history_page_has_a_chart_a_row_per_run_and_the_flag(pages):
    docs, ctx, _ = pages
    text = (docs / "history" / "fused_kernels.md").read_text(encoding="utf-8")
    assert "![fused_kernels/rmsnorm across commits](../generated/charts/history-fused_kernels-rmsnorm.png)" in text
    rows = [line for line in text.splitlines() if line.startswith("| [2026-12-0")]
    assert len(rows) == 5
    assert "regression" in rows[1] and "regression" not in rows[2]
    assert "[1,000 GB/s]" in rows[0] and "[990–1,010]" in rows[0]  # value and its p20-p80 band
    assert "*No counted run yet.*" in (docs / "history" / "gemm_ladder.md").read_text(encoding="utf-8")
    assert len(ctx.jobs) == 1
    ctx.draw_charts()
    assert (docs / "generated" / "charts" / "history-fused_kernels-rmsnorm.png").stat().st_size > 1000


def test_nav_gets_history_and_regressions_before_runs(pages):
    docs, _, _ = pages
    nav = yaml.safe_load((docs / ".nav.yml").read_text(encoding="utf-8"))
    assert [next(iter(e)) for e in nav] == ["Home", "History", "Regressions", "Runs"]


def test_no_regression_says_so(tmp_path):
    docs = tmp_path / "docs"
    ctx = RenderCtx(frame(run(1, 1.0, 2.0)), SITE, docs, tmp_path)
    H.render(ctx)
    assert "*No regression beyond noise" in (docs / "regressions.md").read_text(encoding="utf-8")


def test_a_bench_whose_headline_metric_changed_plots_only_the_newest_metric():
    import pandas as pd

    from gpufolio.site import records as R
    rows = pd.DataFrame({"created_at": ["2026-12-02T10:00", "2026-12-03T10:00", "2026-12-03T12:00"],
                         "metric_name": ["tok_s", "mfu", "mfu"], "metric_unit": ["tok/s", "% of peak", "% of peak"],
                         "value": [92000.0, 57.0, 58.0]})
    assert list(R.newest_metric(rows).value) == [57.0, 58.0]
    assert R.newest_metric(rows.iloc[:0]).empty


def test_a_regression_read_from_a_noisy_number_says_so():
    regs = H.regressions(H.points(frame([*run(1, 1.00, 2.0), *run(2, 1.50, 2.0, spread=0.2)])))
    assert len(regs) == 1 and regs.iloc[0].noisy_band == pytest.approx(0.4)
    note = "\n".join(H.project_note(regs, "projects/fused_kernels/index.md"))
    assert "(a noisy number: its p20–p80 band is 40% of its median)" in note
    quiet = H.regressions(H.points(frame(STORE)))
    assert "noisy" not in "\n".join(H.project_note(quiet, "x.md"))
