"""compare: the noise rule, refusal across GPU models, cases in one run only, run resolution and the CLI."""
import json

import pytest
from gpufolio import compare as C
from made_records import H200, RA, RB, rec


def band(p20, median, p80):
    return {"p20_ms": p20, "median_ms": median, "p80_ms": p80}


@pytest.mark.parametrize("a, b, expected", [
    (band(0.99, 1.0, 1.01), band(0.89, 0.90, 0.91), "faster"),  # bands apart, 10 % less time
    (band(0.99, 1.0, 1.01), band(1.09, 1.10, 1.11), "slower"),
    (band(0.999, 1.0, 1.001), band(0.989, 0.99, 0.991), "within noise"),  # bands apart, but only 1 % moved
    (band(0.96, 1.0, 1.04), band(0.91, 0.95, 0.99), "within noise"),  # 5 % moved, but the bands overlap
    (band(0.99, 1.0, 1.01), band(0.99, 1.0, 1.01), "within noise"),
])
def test_noise_rule(a, b, expected):
    assert C.verdict(a, b) == expected


def test_threshold_is_a_parameter():
    a, b = band(0.999, 1.0, 1.001), band(0.989, 0.99, 0.991)
    assert C.verdict(a, b, threshold=0.02) == "within noise"
    assert C.verdict(a, b, threshold=0.005) == "faster"


def test_ratio_bands_and_baseline_normalised_ratio():
    a = [rec(RA, "eager", 2.0), rec(RA, "fused", 1.0)]
    b = [rec(RB, "eager", 2.0), rec(RB, "fused", 0.8)]
    cmp = C.compare(a, b)
    fused = next(c for c in cmp.cases if c.variant == "fused")
    assert fused.ratio == pytest.approx(1.25)  # B/A of GB/s
    assert fused.verdict == "faster" and fused.time_change == pytest.approx(-0.2)
    assert fused.a_band == pytest.approx((1000 / 1.01, 1000 / 0.99))  # GB/s at p80 and p20, low to high
    assert fused.vs_baseline_ratio == pytest.approx(1.25)
    assert next(c for c in cmp.cases if c.variant == "eager").vs_baseline_ratio is None


def test_time_metric_band_is_the_timing_band():
    assert C.metric_band({"value": 2.0}, {"median_ms": 2.0, "p20_ms": 1.9, "p80_ms": 2.2}) == (1.9, 2.2)


def test_a_clock_reading_the_stamp_lacks_is_a_question_mark():
    assert C._state({"sm_clock_mhz": 1980, "mem_clock_mhz": None, "power_w": 500.0}) == \
        "SM 1980 MHz, mem ? MHz, 500/? W, ? C"


def test_refuses_across_gpu_models():
    other = dict(H200, name="NVIDIA H100 80GB HBM3")
    with pytest.raises(C.CompareError, match="different GPU models"):
        C.compare([rec(RA)], [rec(RB, gpu=other)])
    with pytest.raises(C.CompareError, match="no GPU"):
        C.compare([rec(RA)], [rec(RB, gpu=None, status="dry_run")])


def test_cases_in_one_run_only_and_without_a_number():
    a = [rec(RA, "fused", T=1024), rec(RA, "fused", T=2048), rec(RA, "liger", status="skipped")]
    b = [rec(RB, "fused", T=1024), rec(RB, "fused", T=4096), rec(RB, "liger")]
    cmp = C.compare(a, b)
    assert [c.params for c in cmp.cases] == ["T=1024"]
    assert [(i["params"], i["variant"]) for i in cmp.only_in_a] == [("T=2048", "fused")]
    assert [(i["params"], i["variant"]) for i in cmp.only_in_b] == [("T=4096", "fused")]
    assert cmp.not_measured == [{"project": "fused_kernels", "bench": "rmsnorm", "params": "T=1024",
                                 "variant": "liger", "a_status": "skipped", "b_status": "ok",
                                 "why": "no such kernel here"}]
    text = C.render(cmp)
    assert "1 only in A" in text and "1 only in B" in text and "no number in both" in text


def test_regressions_beyond_a_percentage():
    cmp = C.compare([rec(RA, ms=1.0)], [rec(RB, ms=1.10)])
    assert [c.verdict for c in cmp.cases] == ["slower"]
    assert len(cmp.regressions(5)) == 1 and cmp.regressions(15) == []


RUNS = {
    "20261201T100000Z-aaaaaa": [rec("20261201T100000Z-aaaaaa", sha="1" * 40, created="2026-12-01T10:00:00+00:00")],
    "20261202T100000Z-bbbbbb": [rec("20261202T100000Z-bbbbbb", sha="2" * 40, created="2026-12-02T10:00:00+00:00",
                                    project="gemm_ladder", bench="sgemm")],
    "20261203T100000Z-cccccc": [rec("20261203T100000Z-cccccc", sha="2" * 40, created="2026-12-03T10:00:00+00:00")],
}


@pytest.mark.parametrize("spec, project, expected", [
    ("latest", None, "20261203T100000Z-cccccc"),
    ("latest~1", None, "20261202T100000Z-bbbbbb"),
    ("latest~1", "fused_kernels", "20261201T100000Z-aaaaaa"),
    ("2222222", None, "20261203T100000Z-cccccc"),  # a commit: its newest run
    ("20261201T10", None, "20261201T100000Z-aaaaaa"),  # a unique start of a run id
    ("20261202T100000Z-bbbbbb", None, "20261202T100000Z-bbbbbb"),
])
def test_resolve(spec, project, expected):
    assert C.resolve(spec, RUNS, project) == expected


@pytest.mark.parametrize("spec, message", [
    ("nope", "no run matches 'nope'"),
    ("latest~3", "only 3 runs"),
    ("2026120", "start of 3 run ids"),
    ("3333333", "no run matches"),
])
def test_resolve_refuses_bad_ids(spec, message):
    with pytest.raises(C.CompareError, match=message):
        C.resolve(spec, RUNS)


def _store(tmp_path, monkeypatch, runs):
    monkeypatch.setenv("GPUFOLIO_ROOT", str(tmp_path / "empty-store"))
    out = tmp_path / "out" / "fused_kernels"
    out.mkdir(parents=True)
    for run_id, recs in runs.items():
        (out / f"{run_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return str(tmp_path / "out")


def test_cli_table_json_and_exit_codes(tmp_path, monkeypatch, capsys):
    results = _store(tmp_path, monkeypatch, {
        RA: [rec(RA, ms=1.0, created="2026-12-01T10:00:00+00:00"),
             rec(RA, "eager", 2.0, created="2026-12-01T10:00:00+00:00")],
        "20261202T100000Z-bbbbbb": [rec("20261202T100000Z-bbbbbb", ms=1.2, created="2026-12-02T10:00:00+00:00"),
                                    rec("20261202T100000Z-bbbbbb", "eager", 2.0, created="2026-12-02T10:00:00+00:00")],
    })
    assert C.main(["latest~1", "latest", "--results", results]) == 0
    out = capsys.readouterr().out
    assert "SM 1980 MHz" in out and "slower" in out and "rule: faster / slower" in out
    assert C.main(["latest~1", "latest", "--results", results, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["a"]["gpu"] == "NVIDIA H200" and {c["verdict"] for c in data["cases"]} == {"slower", "within noise"}
    assert C.main(["latest~1", "latest", "--results", results, "--fail-on-regression", "10"]) == 1
    assert "slower by more than 10 %" in capsys.readouterr().err
    assert C.main(["latest~1", "latest", "--results", results, "--fail-on-regression", "25"]) == 0
    capsys.readouterr()
    assert C.main(["latest~1", "nope", "--results", results]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpufolio compare: no run matches 'nope'")


def test_after_bench_compares_with_the_newest_earlier_run_on_the_same_gpu(tmp_path, monkeypatch, capsys):
    other = dict(H200, name="NVIDIA A100-SXM4-80GB")
    results = _store(tmp_path, monkeypatch, {
        RA: [rec(RA, ms=1.0, created="2026-12-01T10:00:00+00:00")],
        "20261202T100000Z-bbbbbb": [rec("20261202T100000Z-bbbbbb", ms=1.0, gpu=other,
                                        created="2026-12-02T10:00:00+00:00")],
    })
    new = [rec("20261203T100000Z-cccccc", ms=0.5, created="2026-12-03T10:00:00+00:00")]
    assert C.after_bench("latest", new, tmp_path / "out") == 0
    out = capsys.readouterr().out
    assert "A: run 20261201T100000Z-aaaaaa" in out and "faster" in out
    assert results
    assert C.after_bench("latest~1", new, tmp_path / "out") == 2
    assert "only 1 run" in capsys.readouterr().err
    first_on_h100 = [rec("20261203T100000Z-dddddd", gpu=dict(H200, name="NVIDIA H100 80GB HBM3"))]
    assert C.after_bench("latest", first_on_h100, tmp_path / "out") == 0  # a first run is no error
    assert "nothing to compare with: no earlier run of fused_kernels on NVIDIA H100" in capsys.readouterr().out


def test_long_lists_of_one_run_cases_are_cut_short():
    cmp = C.compare([rec(RA)], [rec(RB), *(rec(RB, T=t) for t in range(1, 11))])
    line = next(x for x in C.render(cmp).splitlines() if x.startswith("10 only in B"))
    assert line.endswith("... and 2 more (--json lists them all)") and len(cmp.as_json()["only_in_b"]) == 10
