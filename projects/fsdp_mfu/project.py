"""fsdp_mfu's facts for the harness: the stages of a lab run (``python -m gpufolio lab fsdp_mfu``).

The stages share one Inductor cache: settings and stages that compile the same graph compile it once.
"""
from gpufolio.lab import bench, gpu_tests, module

P = "fsdp_mfu"
INDUCTOR = {"TORCHINDUCTOR_CACHE_DIR": "/tmp/gpufolio-inductor-fsdp_mfu"}
PROFILED = "fsdp2_compile+noreshard+fold_clip+fused_proj@32!"  # profile_step.py's setting syntax

STAGES = (
    bench(P, "bench", "--quick", "--variant", "fsdp2_compile_noreshard", "--variant", "fsdp2_compile",
          "--timeout", "90", limit_s=110, env=INDUCTOR),
    bench(P, "bench_full", "--timeout", "90", limit_s=560, default=False, env=INDUCTOR),
    gpu_tests("tests", "projects/fsdp_mfu", "-q", "-rA", limit_s=60, env=INDUCTOR),
    module("profile", "gpufolio_projects.fsdp_mfu.profile_step", "--out", "{out}/profile", "--profile-first", "0",
           "--warmup", "3", "--steps", "6", "--settings", PROFILED, limit_s=40, env=INDUCTOR,
           what="the top kernels of the FSDP2 step"),
    # Training stops itself before the stage's limit: the final evaluation, stamp and plot come after it.
    module("loss_curve", "gpufolio_projects.fsdp_mfu.loss_curve", "--out", "{out}/loss_curve", "--steps", "400",
           "--max-seconds", "60", limit_s=75, default=False, env=INDUCTOR),
)
