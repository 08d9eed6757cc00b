"""Schema v1 on write and on load; the long-format frame."""
import copy

import pytest
from gpufolio import store

RECORD = {
    "schema_version": 1, "run_id": "20261202T120000Z-abc123", "created_at": "2026-12-02T12:00:00+00:00",
    "project": "gemm_ladder", "bench": "sgemm", "variant": "10_warptiling", "role": "candidate",
    "params": {"M": 4096, "N": 4096, "K": 4096, "dtype": "float32"},
    "metric": {"name": "tflops", "unit": "TFLOP/s", "value": 40.0, "higher_is_better": True},
    "extra_metrics": [{"name": "peak_extra_mem", "unit": "GiB", "value": 0.0, "higher_is_better": False}],
    "timing": {"median_ms": 3.4, "p20_ms": 3.3, "p80_ms": 3.5, "min_ms": 3.2, "max_ms": 3.9, "n": 100,
               "method": "cuda_events"},
    "work": {"flops": 2 * 4096**3, "bytes": 3 * 4 * 4096**2, "tokens": None},
    "memory": {"peak_allocated_bytes": 1.0, "peak_extra_bytes": 0.0},
    "correctness": {"passed": True, "reference": "fp64", "max_abs_err": 1e-4, "max_rel_err": 1e-6,
                    "atol": 1e-3, "rtol": 1e-3, "checks": [], "detail": None},
    "status": "ok", "message": None,
    "env": {"gpu": {"name": "NVIDIA H200", "count": 1, "sm_count": 132, "memory_gib": 139.8,
                    "compute_capability": "9.0", "driver": "580", "clocks_start": None, "clocks_end": None},
            "cuda": "13.0", "torch": "2.11.0", "triton": "3.6.0", "python": "3.12.3", "cpu": "x",
            "ceilings": {"copy_gbps": 4160.0, "bf16_tflops": 767.0}},
    "git": {"sha": "f" * 40, "branch": "main", "dirty": False, "diff_digest": None, "source_digest": "0" * 16,
            "source": "provenance_file"},
    "command": "python -m gpufolio bench --project gemm_ladder",
    "bench_meta": {"metric": "tflops", "unit": "TFLOP/s", "higher_is_better": True,
                   "headline_params": {"M": 4096, "N": 4096, "K": 4096}, "headline_baseline": "cublas",
                   "x_param": "M", "description": "", "variant_labels": {}},
}


def test_valid_record_round_trips(tmp_path):
    path = tmp_path / "gemm_ladder" / "results" / "r.jsonl"
    store.append(path, RECORD)
    store.append(path, dict(RECORD, variant="cublas", role="baseline"))
    recs = store.load_records(paths=[path])
    assert [r["variant"] for r in recs] == ["10_warptiling", "cublas"]


@pytest.mark.parametrize("key", ["run_id", "params", "status", "env", "git", "metric", "bench_meta"])
def test_schema_rejects_a_missing_key(key, tmp_path):
    bad = copy.deepcopy(RECORD)
    del bad[key]
    with pytest.raises(store.RecordError, match=key if key != "metric" else "metric"):
        store.append(tmp_path / "r.jsonl", bad)
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.update(status="fast"), "status"),
    (lambda r: r["git"].update(sha="abc"), "git/sha"),
    (lambda r: r.update(role="winner"), "role"),
    (lambda r: r["correctness"].update(passed=False), "correctness/passed"),  # ok needs a passed check
    (lambda r: r["params"].update(shape=[1, 2]), "params/shape"),  # params are flat scalars
])
def test_schema_rejects_bad_values(mutate, field, tmp_path):
    bad = copy.deepcopy(RECORD)
    mutate(bad)
    with pytest.raises(store.RecordError, match=field):
        store.validate(bad)


def test_frame_is_long_format():
    f = store.frame([RECORD, dict(RECORD, variant="cublas", role="baseline", extra_metrics=[])])
    assert len(f) == 3
    head = f[f.is_headline_metric]
    assert list(head.variant) == ["10_warptiling", "cublas"]
    assert head.params_key.iloc[0] == "K=4096,M=4096,N=4096,dtype=float32"
    assert set(store.FRAME_COLUMNS) == set(f.columns)


def test_record_filed_under_the_wrong_project_is_a_problem(tmp_path):
    path = tmp_path / "projects" / "flash_attention" / "results" / "r.jsonl"
    store.append(path, RECORD)
    rep = store.read_file(path, strict=False)
    assert not rep.records and "filed under" in rep.problems[0]


def test_write_atomic_replaces_whole(tmp_path):
    p = tmp_path / "s.json"
    store.write_atomic(p, "one")
    store.write_atomic(p, "two")
    assert p.read_text() == "two" and len(list(tmp_path.iterdir())) == 1
