"""A serving bench's latency-throughput frontier: points from the records' TTFT/TPOT percentiles, the saturation
point, and a chart that draws from records lacking some percentiles (older runs carry no p90 or goodput)."""
from __future__ import annotations

import pandas as pd
import pytest
from gpufolio import store
from gpufolio.site import charts
from gpufolio.site import project as P
from made_records import rec

RUN = "20261203T142513Z-ff3056"  # the committed quick run of the online bench (p50/p99 only, no goodput)


def _online(variant, rate, tok_s, extra):
    r = rec(RUN, variant, project="inference_engine", bench="online")
    r["params"] = {"rate": rate, "num_requests": 12}
    r["metric"] = {"name": "tok_s", "unit": "tok/s", "value": tok_s, "higher_is_better": True}
    r["extra_metrics"] = [{"name": k, "unit": "ms", "value": v, "higher_is_better": False} for k, v in extra.items()]
    return r


def _rows(records):
    df = store.frame(records)
    df["label"] = df.variant
    return df


@pytest.mark.parametrize("tput, want", [([1, 2, 3, 4], None), ([1, 3, 3.9, 4], 2), ([1, 4, 4, 4], 1), ([5], None)])
def test_saturation_is_the_first_load_near_the_top_with_more_load_after_it(tput, want):
    assert charts.saturation_index(tput) == want


def test_points_carry_the_percentiles_the_records_have(tmp_path):
    recs = [_online("engine", r, 1000.0 * r, {"ttft_p50": 20.0 + r, "ttft_p99": 40.0 + r, "tpot_p50": 2.0})
            for r in (16.0, 48.0, 160.0)]
    recs.append(_online("engine_http", 16.0, 900.0, {"ttft_p50": 25.0}))  # one load: drawn, no line
    points = P.frontier_points(_rows(recs), "rate")
    assert sorted(points.x[points.variant == "engine"]) == [16.0, 48.0, 160.0]
    assert "tpot_p99" not in points and points.tput.max() == 160000.0
    assert charts.frontier(tmp_path / "f.png", points, "tok/s", "t").stat().st_size > 0


def test_records_without_latencies_give_no_points():
    assert P.frontier_points(_rows([rec(RUN, "fused"), rec(RUN, "eager")]), "T").empty


def test_the_committed_quick_run_draws(repo, tmp_path):
    recs = [r for r in store.load_records(repo) if r["run_id"] == RUN and r["bench"] == "online" and r["status"] == "ok"]
    if not recs:
        pytest.skip("the committed online run is not in this checkout")
    points = P.frontier_points(_rows(recs), "rate")
    assert set(points.variant) == {"engine", "engine_http"} and len(points) == 6
    assert charts.frontier(tmp_path / "f.png", points, "tok/s", "t").stat().st_size > 0


def test_a_saturated_sweep_stars_its_knee(tmp_path, monkeypatch):
    seen = []
    save = charts._save
    monkeypatch.setattr(charts, "_save", lambda fig, path, *a, **k: (seen.append(fig), save(fig, path, *a, **k))[1])
    points = pd.DataFrame([{"variant": "engine", "label": "engine", "x": r, "tput": t, "ttft_p50": 20.0 * r,
                            "tpot_p99": 3.0} for r, t in ((32, 4e3), (128, 15e3), (256, 24e3), (384, 24.5e3))])
    charts.frontier(tmp_path / "f.png", points, "tok/s", "t")
    stars = [ln for ax in seen[-1].axes for ln in ax.get_lines() if ln.get_marker() == "*"]
    assert [ln.get_xdata()[0] for ln in stars] == [24e3, 24e3]  # on both panels, at 256 req/s
    labels = [t.get_text() for leg in seen[-1].legends for t in leg.get_texts()]
    assert any(t.startswith("saturation") for t in labels) and len(labels) <= charts.MAX_LEGEND
