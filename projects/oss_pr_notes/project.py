"""oss_pr_notes' facts for the harness.

ENTRY_POINTS: the bench modules, as globs under this folder: bench.py gathers each note's repro by name at import
(importlib), so the notes' repro benches are named here for the source digest to follow their imports.
STAGES: a lab run (``python -m gpufolio lab oss_pr_notes``): the backward repro's records (the patch and its
2x/8x neighbours against upstream), then the GPU test of the patched launch against upstream's.
"""
from gpufolio.lab import bench, gpu_tests

# The project's facts (gpufolio.project_facts reads these literals without running this file).
TITLE = "Open-source PR notes"
ORDER = 6
# The bench the home page quotes: the prepared contribution first; the forward note is a measured dead end
# (status: idea).
HOME_BENCHES = ("liger_fused_add_rmsnorm_bwd", "liger_fused_add_rmsnorm")

P = "oss_pr_notes"
ENTRY_POINTS = ("bench.py", "notes/*/repro/bench.py")

STAGES = (
    bench(P, "bench_bwd", "--quick", "--bench", "liger_fused_add_rmsnorm_bwd", "--variant", "patched",
          "--variant", "patched_x2", "--variant", "patched_x8", limit_s=40),
    bench(P, "bench_fwd", "--bench", "liger_fused_add_rmsnorm", limit_s=60, default=False),
    gpu_tests("tests", "projects/oss_pr_notes/tests/test_bwd_patch.py", "-q", limit_s=30),
)
