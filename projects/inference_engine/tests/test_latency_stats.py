"""Latency percentiles and goodput, by hand: pooled over requests, one-token requests without a TPOT, the SLO's
bounds inclusive; the online bench's record metrics from its calls (the first call left out)."""
import math

import pytest
from gpufolio_projects.inference_engine import bench
from gpufolio_projects.inference_engine.latency_stats import SLO, good_fraction, latency_summary


def test_percentiles_are_pooled_in_ms_and_one_token_requests_have_no_tpot():
    out = latency_summary([0.01, 0.02, 0.03], [None, 0.002, 0.004], [0.1, 0.2, 0.3])
    assert set(out) == {f"{n}_p{q}" for n in ("ttft", "tpot", "e2e") for q in (50, 90, 99)}
    assert out["ttft_p50"] == pytest.approx(20.0) and out["e2e_p50"] == pytest.approx(200.0)
    assert out["tpot_p50"] == pytest.approx(3.0)  # the one-token request adds no TPOT
    assert math.isnan(latency_summary([], [], [])["ttft_p99"])


def test_goodput_counts_requests_within_both_bounds():
    slo = SLO(ttft_ms=100.0, tpot_ms=5.0)
    ttft = [0.05, 0.1, 0.2, 0.05]  # the second is on the TTFT bound: good; the third is past it
    tpot = [0.004, 0.005, 0.001, 0.006]  # the fourth is past the TPOT bound
    assert good_fraction(slo, ttft, tpot) == 0.5
    assert good_fraction(slo, [0.01], [None]) == 1.0 and good_fraction(slo, [], []) == 0.0
    with pytest.raises(ValueError, match="positive"):
        SLO(0.0, 5.0)


def test_the_online_record_pools_every_call_but_the_first():
    def call(ttft, tpot):
        return [{"ttft": ttft, "tpot": tpot, "e2e": ttft + 10 * tpot, "token_ids": []}] * 4

    calls = [call(9.0, 1.0), call(0.05, 0.002), call(0.05, 0.02)]  # the first (a warm-up) would fail every bound
    m = bench.online_metrics(calls, SLO(200.0, 10.0), num_requests=4, median_s=2.0, rate=8.0)
    assert m["ttft_p99"][0] == pytest.approx(50.0) and m["tpot_p50"][0] == pytest.approx(11.0)
    assert m["req_s"][0] == 2.0 and m["goodput"][0] == pytest.approx(1.0)  # half the pooled requests, 2 req/s
    assert m["offered_rate"][0] == 8.0 and all(unit == "ms" for k, (_, unit, _) in m.items() if "_p" in k)


def test_the_full_sweep_passes_capacity_bounded_in_requests_and_time():
    full, quick = bench._online_configs("full"), bench._online_configs("quick")
    assert [c["rate"] for c in full] == list(bench.ONLINE_FULL_RATES) and max(bench.ONLINE_FULL_RATES) >= 256
    assert all(bench.ONLINE_MIN_REQUESTS <= c["num_requests"] <= bench.ONLINE_MAX_REQUESTS for c in full)
    assert all(c["max_call_s"] > 0 and c["output_cap"] == 128 for c in full)
    assert all(c["num_requests"] <= 12 for c in quick)
    for c in full + quick + bench._online_configs("dry"):  # the SLO is in every record's params
        assert (c["slo_ttft_ms"], c["slo_tpot_ms"]) == (bench.ONLINE_SLO.ttft_ms, bench.ONLINE_SLO.tpot_ms)
    # arrivals of every full case: five calls of at most ~2 s each per variant
    assert sum(5 * c["num_requests"] / c["rate"] for c in full) <= 65


def test_the_lab_plot_draws_the_committed_run_with_the_sites_chart(tmp_path):
    from gpufolio_projects.inference_engine.lab import plot_online

    out = tmp_path / "online.png"
    assert plot_online.main(["--run", "20261203T142513Z-ff3056", "--out", str(out)]) == 0 and out.stat().st_size
    assert plot_online.main(["--run", "no-such-run", "--out", str(out)]) == 2
