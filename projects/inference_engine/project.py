"""inference_engine's facts for the harness: the stages of a lab run (``python -m gpufolio lab inference_engine``)."""
from gpufolio.lab import bench, gpu_tests, module

# The project's facts (gpufolio.project_facts reads these literals without running this file).
TITLE = "Inference engine"
ORDER = 5
HOME_BENCHES = ("decode_b1", "offline_throughput", "online")  # the bench the home page quotes, by preference

P = "inference_engine"

STAGES = (
    # 240 s: the quick run took 196 s on the H200 without the online bench (HF's static batch of 64 alone ~120 s).
    bench(P, "bench", "--quick", "--bench", "decode_b1", "--bench", "offline_throughput", "--bench", "online",
          limit_s=240),
    bench(P, "bench_full", limit_s=560, default=False),
    bench(P, "bench_decode", "--quick", "--bench", "decode_b1", limit_s=150, default=False,
          what="decode_b1 alone (the quick bench without the offline batch and the online sweep)"),
    # The online bench's full sweep alone, both engine variants (bench.ONLINE_FULL_RATES; about 200 s on an H200:
    # the stamp, the engine's set-up, then 6 rates x 2 variants x 5 calls of ~2.5 s).
    bench(P, "online_frontier", "--bench", "online", limit_s=300, default=False,
          what="the online latency-throughput sweep (full), in process and over HTTP"),
    gpu_tests("tests", "projects/inference_engine", "-q", limit_s=60),
    module("profile", "gpufolio_projects.inference_engine.lab.profile_decode", "--out", "{out}", "--stages",
           "kernels,step,gemv,offline", limit_s=60, what="decode kernels, one step, the GEMV sweep, offline"),
)
