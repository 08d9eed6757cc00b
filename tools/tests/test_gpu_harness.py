"""The harness on a real GPU: events timing, L2 flush, ceilings, memory accounting, planted faults on CUDA."""
import os

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


def test_ceilings_are_in_a_sane_range():
    from gpufolio.stamp import measure_ceilings

    c = measure_ceilings(quick=True)
    assert 100 < c["copy_gbps"] < 20000
    assert 10 < c["bf16_tflops"] < 3000 and 1 < c["fp32_tflops"] < 500


def test_events_timing_of_a_copy_matches_bandwidth_order():
    from gpufolio.timing import time_events

    x = torch.randn(64 * 2**20, device="cuda")
    y = torch.empty_like(x)
    s = time_events(lambda: y.copy_(x), rep_ms=100)
    gbps = 2 * x.numel() * 4 / (s.median_ms * 1e-3) / 1e9
    assert s.n >= 10 and s.min_ms <= s.median_ms <= s.max_ms and 100 < gbps < 20000
    g = time_events(lambda: y.copy_(x), rep_ms=100, cuda_graph=True)
    assert g.method == "cuda_graph_events" and g.median_ms > 0


def test_planted_faults_on_cuda(tmp_path):
    from gpufolio.projects import benches
    from gpufolio.runner import Plan, run

    os.environ["GPUFOLIO_BENCH_MODULES"] = "planted_benches"
    benches.cache_clear()
    try:
        res = run(Plan(["fused_kernels"], "quick", variant_names={"good", "writes_nothing", "cached", "oom"}),
                  out_dir=tmp_path, timeout_s=60, progress=False)
    finally:
        os.environ.pop("GPUFOLIO_BENCH_MODULES")
        benches.cache_clear()
    got = {r["variant"]: r["status"] for r in res.records}
    assert got == {"baseline": "ok", "good": "ok", "writes_nothing": "failed_correctness",
                   "cached": "failed_correctness", "oom": "oom"}
    good = next(r for r in res.records if r["variant"] == "good")
    assert good["env"]["gpu"]["sm_count"] > 0 and good["env"]["ceilings"]["copy_gbps"] > 0
    assert good["timing"]["method"] == "cuda_events" and good["memory"]["peak_extra_bytes"] >= 0
