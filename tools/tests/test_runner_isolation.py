"""The correctness gate and isolation, end to end, on planted faults (CPU, dry mode)."""
from __future__ import annotations

import json
import os

import pytest
from gpufolio import store
from gpufolio.runner import Plan, run

pytest.importorskip("torch")

EXPECTED = {
    "baseline": "dry_run",
    "good": "dry_run",
    "writes_nothing": "failed_correctness",   # the NaN poison survives
    "skips_tail": "failed_correctness",       # the last elements keep their poison
    "writes_zeros": "failed_correctness",
    "returns_nan": "failed_correctness",
    "cached": "failed_correctness",           # right on the first inputs, wrong on fresh ones
    "first_call_only": "failed_correctness",  # caught on the last timed rep and after the timed loop
    "clobbers_inputs": "failed_correctness",  # the reference comes from a pristine copy; x must be unchanged
    "replays": "failed_correctness",          # the timed rep's own output, inputs refreshed in place
    "declared_state": "dry_run",              # writing an input named in mutable_inputs is allowed
    "nan_extra_metric": "error",              # a NaN never reaches a record
    "bad_work": "error",                      # the schema rejects the record: an error record, sweep goes on
    "aborts": "error",                        # the worker dies; the sweep goes on
    "hangs": "timeout",
    "oom": "oom",
    "raises": "error",
    "unsupported": "skipped",
}


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    os.environ["GPUFOLIO_BENCH_MODULES"] = "planted_benches"
    from gpufolio.projects import benches

    benches.cache_clear()
    try:
        out = tmp_path_factory.mktemp("out")
        result = run(Plan(["fused_kernels"], "dry"), out_dir=out, timeout_s=8, command="pytest", progress=False)
    finally:
        os.environ.pop("GPUFOLIO_BENCH_MODULES")
        benches.cache_clear()
    return result


def test_every_planted_fault_gets_its_status(planted_run):
    got = {r["variant"]: r["status"] for r in planted_run.records}
    assert got == EXPECTED


def test_the_sweep_finishes_and_every_record_is_on_disk(planted_run):
    (path,) = planted_run.paths
    on_disk = store.load_records(paths=[path])
    assert [r["variant"] for r in on_disk] == list(EXPECTED)
    for r in on_disk:
        assert r["run_id"] == planted_run.run_id
        assert r["env"]["gpu"] is None  # CPU machine: no invented GPU
        assert r["bench_meta"]["headline_baseline"] == "baseline"


def test_failed_checks_carry_errors_and_no_timed_number_before_timing(planted_run):
    rec = {r["variant"]: r for r in planted_run.records}
    nothing = rec["writes_nothing"]
    assert nothing["correctness"]["passed"] is False
    assert nothing["timing"] is None and nothing["metric"] is None
    assert any(c["non_finite"] > 0 for c in nothing["correctness"]["checks"])
    zeros = rec["writes_zeros"]["correctness"]
    assert zeros["max_abs_err"] > 1e-3
    later = rec["first_call_only"]["correctness"]
    phases = {c["phase"]: c["passed"] for c in later["checks"]}
    assert phases == {"before_timing": True, "timed_rep": False, "after_timing": False}


NO_NUMBER = ("metric", "timing", "memory")


@pytest.mark.parametrize("variant", [v for v, s in EXPECTED.items() if s not in ("ok", "dry_run")])
def test_a_record_that_did_not_pass_carries_no_number(planted_run, variant):
    rec = next(r for r in planted_run.records if r["variant"] == variant)
    assert all(rec[k] is None for k in NO_NUMBER) and rec["extra_metrics"] == []


def test_clobbered_inputs_are_named(planted_run):
    rec = next(r for r in planted_run.records if r["variant"] == "clobbers_inputs")
    assert rec["correctness"]["detail"]["before_timing"]["changed_inputs"] == ["x"]
    assert rec["message"].startswith("failed the correctness check before timing")


def test_a_replayed_result_is_caught_on_the_timed_rep(planted_run):
    rec = next(r for r in planted_run.records if r["variant"] == "replays")
    phases = {c["phase"]: c["passed"] for c in rec["correctness"]["checks"]}
    assert phases == {"before_timing": True, "timed_rep": False, "after_timing": True}
    assert "last timed repetition" in rec["message"]


def test_bad_numbers_and_rejected_records_are_error_records_naming_the_field(planted_run):
    rec = {r["variant"]: r for r in planted_run.records}
    assert "planted" in rec["nan_extra_metric"]["message"] and "nan" in rec["nan_extra_metric"]["message"]
    assert "work/flops" in rec["bad_work"]["message"]


def test_good_records_say_what_setup_and_refresh_cost(planted_run):
    good = next(r for r in planted_run.records if r["variant"] == "good")
    setup = good["setup"]
    assert setup["case_s"] >= 0 and setup["job_s"] >= setup["case_s"] and setup["refresh_s"] >= 0
    assert setup["builds"] == []


def test_good_records_have_stats_and_metric(planted_run):
    good = next(r for r in planted_run.records if r["variant"] == "good")
    t = good["timing"]
    assert t["n"] >= 3 and t["min_ms"] <= t["median_ms"] <= t["max_ms"]
    assert good["metric"]["unit"] == "GB/s" and good["metric"]["value"] > 0
    assert good["correctness"]["passed"] and good["correctness"]["max_abs_err"] == 0.0


def test_crash_and_timeout_messages_say_what_happened(planted_run):
    rec = {r["variant"]: r for r in planted_run.records}
    assert "SIGABRT" in rec["aborts"]["message"]
    assert "8 s" in rec["hangs"]["message"]
    assert "out of memory" in rec["oom"]["message"]


def test_killed_mid_write_leaves_the_file_parsable(planted_run, tmp_path):
    (path,) = planted_run.paths
    torn = tmp_path / path.name
    text = path.read_text()
    torn.write_text(text + text.splitlines()[0][:57])  # a crash in the middle of the next line
    rep = store.read_file(torn, strict=False)
    assert len(rep.records) == len(EXPECTED)
    assert rep.problems and "torn last line" in rep.problems[0]
    with pytest.raises(store.RecordError):
        store.read_file(torn, strict=True)
    json.loads(text.splitlines()[-1])  # the real file ends on a whole record
