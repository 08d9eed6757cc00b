"""The online bench's HTTP variant on the CPU dry-run config: the harness's case streams the workload through the
in-process server, passes the HF check, and reports the same latency metrics as the in-process variant."""
import pytest
import torch

pytest.importorskip("fastapi")

from gpufolio_projects.inference_engine import bench  # noqa: E402


def test_only_online_has_the_http_variant():
    benches = {b.name: b for b in bench.BENCHES}
    assert benches["online"].variant("engine_http").role == "candidate"
    assert all("engine_http" not in [v.name for v in b.variants] for n, b in benches.items() if n != "online")


def test_http_variant_passes_the_check_and_reports_latencies():
    params = bench._online_configs("dry")[0]
    case = bench._online_case("engine_http", params, torch.device("cpu"))
    inputs = case.make_inputs(torch.Generator().manual_seed(0))
    for _ in range(2):  # the first call is the warm-up the metrics leave out
        outs = case.fn(inputs)
    assert case.check(inputs, outs).passed
    extra = case.extra_metrics(0.0)
    assert {"ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99"} <= set(extra) and extra["ttft_p50"][0] > 0
