"""fsdp_mfu's facts for the harness: the stages of a lab run (``python -m gpufolio lab fsdp_mfu``).

The stages share one Inductor cache: settings and stages that compile the same graph compile it once.
"""
from gpufolio.lab import bench, gpu_tests, module

# The project's facts (gpufolio.project_facts reads these literals without running this file).
TITLE = "FSDP and MFU"
ORDER = 4
HOME_BENCHES = ("train_step",)  # the bench the home page quotes

P = "fsdp_mfu"
INDUCTOR = {"TORCHINDUCTOR_CACHE_DIR": "/tmp/gpufolio-inductor-fsdp_mfu"}
PROFILED = "fsdp2_compile+noreshard+fold_clip+fused_proj@32!"  # profile_step.py's setting syntax

# (model, GPU counts, per-case timeout): about 45 s a case for llama_1b (2-3 strategies per GPU count, weak and
# strong), 90 s for llama_8b (FSDP2 and HSDP only; the points memory.py rules out are skipped at once).
SCALING_CALLS = (("llama_1b", "1,2", "300"), ("llama_1b", "4", "300"), ("llama_1b", "8", "300"),
                 ("llama_8b", "1,2,4", "420"), ("llama_8b", "8", "420"))

STAGES = (
    bench(P, "bench", "--bench", "train_step", "--quick", "--variant", "fsdp2_compile_noreshard", "--variant",
          "fsdp2_compile", "--timeout", "90", limit_s=110, env=INDUCTOR),
    bench(P, "bench_full", "--bench", "train_step", "--timeout", "90", limit_s=560, default=False, env=INDUCTOR),
    gpu_tests("tests", "projects/fsdp_mfu", "-q", "-rA", limit_s=60, env=INDUCTOR),
    module("profile", "gpufolio_projects.fsdp_mfu.profile_step", "--out", "{out}/profile", "--profile-first", "0",
           "--warmup", "3", "--steps", "6", "--settings", PROFILED, limit_s=40, env=INDUCTOR,
           what="the top kernels of the FSDP2 step"),
    # The multi-GPU scaling sweep (scaling_bench.py), cut by model and GPU count into stages of under 8 minutes,
    # each for its own call on an 8-GPU box (they are not default stages: a one-GPU box skips every point).
    *(bench(P, f"scaling_{model}_{'_'.join(gpus.split(','))}", "--bench", "scaling", "--timeout", timeout,
            limit_s=460, default=False, what=f"scaling bench: {model} on {gpus} GPUs",
            env={**INDUCTOR, "FSDP_MFU_SCALING_MODELS": model, "FSDP_MFU_SCALING_GPUS": gpus})
      for model, gpus, timeout in SCALING_CALLS),
    # Training stops itself before the stage's limit: the final evaluation, stamp and plot come after it.
    module("loss_curve", "gpufolio_projects.fsdp_mfu.lab.loss_curve", "--out", "{out}/loss_curve", "--steps", "400",
           "--max-seconds", "60", limit_s=75, default=False, env=INDUCTOR),
)
