"""fused_kernels' facts for the harness: the stages of a lab run (``python -m gpufolio lab fused_kernels``).

Default: every bench in one quick run, then the GPU tests. The tuning sweeps (tune.py) are named to run.
"""
from gpufolio.lab import bench, gpu_tests, module

# The project's facts (gpufolio.project_facts reads these literals without running this file).
TITLE = "Fused kernels"
ORDER = 3
# The bench the home page quotes, in order of preference. add+RMSNorm is the op the project is judged on;
# RMSNorm alone is its residual-free special case.
HOME_BENCHES = ("add_rmsnorm", "rmsnorm", "swiglu", "linear_cross_entropy")

P = "fused_kernels"
TUNE = "gpufolio_projects.fused_kernels.lab.tune"
INDUCTOR = {"TORCHINDUCTOR_CACHE_DIR": "/tmp/gpufolio-inductor-fused_kernels"}

STAGES = (
    # bench.py's order: the last benches are the first to go if the stage's limit cuts it short.
    bench(P, "bench", "--quick", "--timeout", "40", limit_s=260),
    bench(P, "bench_full", "--timeout", "60", limit_s=420, default=False),
    gpu_tests("tests", "projects/fused_kernels", "-q", limit_s=60),
    module("tune_lce", TUNE, "lce", limit_s=60, default=False, what="LCE schedules: time and peak memory"),
    module("tune_lce_head", TUNE, "lce_head", limit_s=45, default=False, what="the LCE head at T = d"),
    module("tune_swiglu", TUNE, "swiglu", limit_s=30, default=False, env=INDUCTOR, what="SwiGLU launch sweep"),
    module("tune_odd", TUNE, "odd", limit_s=30, default=False, what="split norms at odd widths"),
    module("tune_odd_compile", TUNE, "odd_compile", limit_s=35, default=False, env=INDUCTOR,
           what="RMSNorm at odd widths against torch.compile"),
)
