"""Hand-made schema-v1 records for the compare and history tests: one GB moved in ``ms`` (GB/s = 1000 / ms)."""
from gpufolio import store

H200 = {"name": "NVIDIA H200", "count": 1, "sm_count": 132, "memory_gib": 139.8, "compute_capability": "9.0",
        "driver": "580", "clocks_start": {"sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "power_w": 500.0,
                                          "power_limit_w": 700.0, "temperature_c": 44},
        "clocks_end": None}
RA, RB = "20261201T100000Z-aaaaaa", "20261202T100000Z-bbbbbb"
META = {"metric": "gbps", "unit": "GB/s", "higher_is_better": True, "headline_params": {"T": 1024},
        "headline_baseline": "eager", "x_param": "T", "description": "", "variant_labels": {}}


def rec(run_id, variant="fused", ms=1.0, spread=0.01, *, role="candidate", T=1024, status="ok", gpu=H200,
        sha="a" * 40, created="2026-12-02T12:00:00+00:00", project="fused_kernels", bench="rmsnorm"):
    """A schema-v1 record whose metric is 1 GB moved in ``ms`` (so GB/s = 1000 / ms); band = ms * (1 +- spread)."""
    measured = status in ("ok", "dry_run")
    r = {
        "schema_version": 1, "run_id": run_id, "created_at": created, "project": project, "bench": bench,
        "variant": variant, "role": "baseline" if variant == "eager" else role, "params": {"T": T},
        "metric": {"name": "gbps", "unit": "GB/s", "value": 1e9 / (ms * 1e-3) / 1e9, "higher_is_better": True}
        if measured else None,
        "extra_metrics": [],
        "timing": {"median_ms": ms, "p20_ms": ms * (1 - spread), "p80_ms": ms * (1 + spread), "min_ms": ms * 0.9,
                   "max_ms": ms * 1.2, "n": 100, "method": "cuda_events"} if measured else None,
        "work": {"flops": None, "bytes": 1e9, "tokens": None}, "memory": None,
        "correctness": {"passed": True, "reference": "fp32", "max_abs_err": 0.0, "max_rel_err": 0.0, "atol": 0.0,
                        "rtol": 0.0, "checks": [], "detail": None} if measured else None,
        "status": status, "message": None if measured else "no such kernel here",
        "env": {"gpu": gpu, "cuda": "13.0", "torch": "2.11.0", "triton": "3.6.0", "python": "3.12.3", "cpu": "x",
                "ceilings": {"copy_gbps": 4160.0}},
        "git": {"sha": sha, "branch": "main", "dirty": False, "diff_digest": None, "source_digest": "0" * 16,
                "source": "git"},
        "command": "python -m gpufolio bench", "bench_meta": META,
    }
    store.validate(r)
    return r
