"""The online bench on the CPU dry-run config: the harness's case streams the workload through the in-process
server (or the in-process loop), passes the HF check, and reports TTFT/TPOT/e2e p50/p90/p99, goodput and the
request rate; a call past its time bound aborts its live requests."""
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
    extra = case.extra_metrics(0.5)
    latencies = {f"{n}_p{q}" for n in ("ttft", "tpot", "e2e") for q in (50, 90, 99)}
    assert latencies | {"goodput", "req_s", "offered_rate"} <= set(extra) and extra["ttft_p50"][0] > 0
    assert extra["ttft_p50"][0] <= extra["ttft_p90"][0] <= extra["ttft_p99"][0] <= extra["e2e_p99"][0]
    assert extra["req_s"][0] == params["num_requests"] / 0.5 and 0 <= extra["goodput"][0] <= extra["req_s"][0]


def test_the_in_process_variant_reports_the_same_metrics():
    params = bench._online_configs("dry")[0]
    case = bench._online_case("engine", params, torch.device("cpu"))
    inputs = case.make_inputs(torch.Generator().manual_seed(0))
    for _ in range(2):
        outs = case.fn(inputs)
    assert case.check(inputs, outs).passed
    extra = case.extra_metrics(0.5)
    assert {"ttft_p90", "tpot_p90", "e2e_p50", "goodput"} <= set(extra) and extra["e2e_p50"][0] > 0


def test_a_run_past_its_time_bound_aborts_what_is_live():
    from gpufolio_projects.inference_engine.llm_engine import run_online

    params = bench._online_configs("dry")[0]
    eng = bench._engine(params, torch.device("cpu"))
    prompts = [[1, 2, 3]] * 3
    with pytest.raises(TimeoutError, match="still live"):
        run_online(eng, prompts, [bench._greedy(8)] * 3, [0.0, 0.0, 5.0], max_duration_s=0.0)
    assert not eng.has_unfinished()
