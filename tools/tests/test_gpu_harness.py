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


def test_events_timing_times_the_kernel_not_a_slow_host_launch():
    import time

    from gpufolio.timing import time_events

    x = torch.randn(2**20, device="cuda")
    y = torch.empty_like(x)
    plain = time_events(lambda: y.copy_(x), rep_ms=50)

    def slow_launch():  # a launcher whose host work (2 ms) far outlasts its kernel (microseconds)
        time.sleep(0.002)
        y.copy_(x)

    s = time_events(slow_launch, rep_ms=50)
    assert s.host_ms >= 2.0 and s.gap_ms > s.host_ms
    assert s.median_ms < plain.median_ms + 0.2, (s, plain)  # without the wait it would read about 2 ms


ON_CUDA = {"baseline": "ok", "good": "ok", "writes_nothing": "failed_correctness", "cached": "failed_correctness",
           "first_call_only": "failed_correctness", "clobbers_inputs": "failed_correctness",
           "replays": "failed_correctness", "declared_state": "ok", "nan_extra_metric": "error", "oom": "oom",
           "bad_work": "error"}


def test_planted_faults_on_cuda(tmp_path):
    from gpufolio.projects import benches
    from gpufolio.runner import Plan, run

    os.environ["GPUFOLIO_BENCH_MODULES"] = "planted_benches"
    benches.cache_clear()
    try:
        res = run(Plan(["fused_kernels"], "quick", variant_names=set(ON_CUDA) - {"baseline"}),
                  out_dir=tmp_path, timeout_s=60, progress=False)
    finally:
        os.environ.pop("GPUFOLIO_BENCH_MODULES")
        benches.cache_clear()
    got = {r["variant"]: r["status"] for r in res.records}
    assert got == ON_CUDA
    for r in res.records:
        if r["status"] != "ok":
            assert r["metric"] is None and r["timing"] is None and r["extra_metrics"] == [] and r["memory"] is None
    replay = next(r for r in res.records if r["variant"] == "replays")
    assert {c["phase"]: c["passed"] for c in replay["correctness"]["checks"]}["timed_rep"] is False
    good = next(r for r in res.records if r["variant"] == "good")
    assert good["env"]["gpu"]["sm_count"] > 0 and good["env"]["ceilings"]["copy_gbps"] > 0
    assert good["timing"]["method"] == "cuda_events" and good["memory"]["peak_extra_bytes"] >= 0


EXTENSION_CPP = """
#include <torch/extension.h>
torch::Tensor add_one(torch::Tensor x);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one); }
"""
EXTENSION_CU = """
#include <torch/extension.h>
__global__ void add_one_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1; }
torch::Tensor add_one(torch::Tensor x) {
  auto y = x.clone(); int n = y.numel();
  add_one_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
  return y;
}
"""


def _tiny_extension(tmp_path):
    (tmp_path / "ext.cpp").write_text(EXTENSION_CPP)
    (tmp_path / "ext.cu").write_text(EXTENSION_CU)
    return [str(tmp_path / "ext.cpp"), str(tmp_path / "ext.cu")]


def test_a_build_after_an_interrupted_one_clears_its_lock_and_is_timed(tmp_path):
    from gpufolio import extension

    build_dir = tmp_path / "build"
    build_dir.mkdir()
    (build_dir / extension.TORCH_LOCK_NAME).write_text("")  # what a killed build leaves behind
    extension.take_builds()
    mod = extension.load("gpufolio_tiny_ext", _tiny_extension(tmp_path), build_dir, limit_s=300)
    x = torch.randn(1000, device="cuda")
    assert torch.equal(mod.add_one(x), x + 1)
    (build,) = extension.take_builds()
    assert build["status"] == "ok" and build["cleared_stale_lock"] and build["seconds"] > 0


def test_a_build_over_its_limit_is_an_error_and_leaves_no_lock(tmp_path):
    from gpufolio import extension

    build_dir = tmp_path / "build"
    with pytest.raises(extension.BuildError, match="longer than its limit"):
        extension.load("gpufolio_tiny_ext_slow", _tiny_extension(tmp_path), build_dir, limit_s=1)
    assert not (build_dir / extension.TORCH_LOCK_NAME).exists()
