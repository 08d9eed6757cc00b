"""flash_attention's facts for the harness: the stages of a lab run (``python -m gpufolio lab flash_attention``).

The bench stages keep the tuner's picks and timings (tune.json) beside their records, as evidence.
"""
from gpufolio.lab import bench, gpu_tests, module, ncu

# The project's facts (gpufolio.project_facts reads these literals without running this file).
TITLE = "FlashAttention"
ORDER = 2
HOME_BENCHES = ("attention_fwd", "attention_fwd_bwd")  # the bench the home page quotes, in order of preference

P = "flash_attention"
LAB = "gpufolio_projects.flash_attention.lab"
TUNE = {"GPUFOLIO_FA_TUNE_FILE": "{out}/tune.json", "GPUFOLIO_FA_TUNE_VERBOSE": "1"}
# Forward configs too risky for the bench (warp specialisation), timed by experiment.py.
EXPERIMENT_CONFIGS = ("128,128,8,3", "128,128,8,2,ws", "128,128,4,2,ws")
NCU_SECTIONS = ("SpeedOfLight", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats", "WarpStateStats")
PROFILE = ("{python}", "-m", f"{LAB}.profile", "--S", "4096", "--D", "128", "--reps", "1")  # one call, headline shape

STAGES = (
    bench(P, "bench", "--quick", "--timeout", "90", limit_s=240, env=TUNE),  # FlashAttention-4 compiles at first use
    bench(P, "bench_full", "--timeout", "90", limit_s=560, default=False,
          env={**TUNE, "GPUFOLIO_FA_FLEX_S": "1024 4096 16384"}),  # FlexAttention compiled at three lengths only
    # The forward's length and head-dim sweep, our candidates only (every baseline runs anyway): the full
    # bench's forward configs without its backward.
    bench(P, "sweep_fwd", "--bench", "attention_fwd", "--variant", "triton_fa", "--variant", "gluon_fa_under_pv",
          "--variant", "gluon_fa_persistent",
          "--variant", "sdpa_cudnn", "--variant", "fa4",
          "--timeout", "90", limit_s=360, default=False, env=TUNE),
    # Forward+backward across the full bench's lengths and head dims, our candidates only (every baseline runs
    # anyway; FlexAttention compiled at the headline length only).
    bench(P, "sweep_fwd_bwd", "--bench", "attention_fwd_bwd", "--variant", "triton_fa", "--variant",
          "gluon_fa_persistent", "--variant", "gluon_fa_bwd", "--variant", "sdpa_cudnn", "--variant", "fa4",
          "--timeout", "90", limit_s=450, default=False, env={**TUNE, "GPUFOLIO_FA_FLEX_S": "4096"}),
    # Both sweeps' shortest rows alone, where the work per call is closest to the host's time to queue it (S = 512
    # and 1024): our newest candidates, every baseline beside them, FlexAttention not compiled.
    bench(P, "sweep_short", "--bench", "attention_fwd", "--bench", "attention_fwd_bwd", "--where", "S=512,1024",
          "--variant", "gluon_fa_persistent", "--variant", "gluon_fa_bwd", "--variant", "triton_fa",
          "--timeout", "90", limit_s=300, default=False, env={**TUNE, "GPUFOLIO_FA_FLEX_S": "4096"}),
    module("experiment", "gpufolio_projects.flash_attention.lab.experiment", *EXPERIMENT_CONFIGS, limit_s=30),
    ncu("ncu", "_attn_fwd_kernel|_bwd_dkdv_kernel|_bwd_dq_kernel", 3, NCU_SECTIONS, *PROFILE, "--bwd", limit_s=40,
        what="ncu on the forward, dK/dV and dQ kernels at the headline shape"),
    # The Triton forward (the tuner's pick at the headline shape, pinned) and the Gluon forward's schedules.
    ncu("ncu_gluon", "_attn_fwd_kernel|_attn_fwd_ws_kernel", 4, (*NCU_SECTIONS, "SchedulerStats"), *PROFILE,
        "--backend", "triton,gluon_lean,gluon_under_pv,gluon_persistent", limit_s=80, default=False,
        what="ncu on the Triton forward and three of the Gluon forward's schedules at the headline shape",
        env={"GPUFOLIO_FA_FWD": "128,128,8,3"}),
    # The committed backward's main kernel (first launch) beside lab/variants.py's "dV before dPᵀ's wait" (second).
    ncu("ncu_gluon_bwd_variant", "_attn_bwd_ws_kernel", 2,
        (*NCU_SECTIONS, "SchedulerStats", "InstructionStats"),
        *PROFILE, "--bwd", "--backend", "gluon_bwd,gluon_bwd@dV before dPᵀ's wait", limit_s=150, default=False,
        what="ncu on the Gluon backward as committed and with dV's wgmma before the wait on dPᵀ"),
    # The committed backward beside the dQ writer warp's two forms (lab/variants.py), at D = 128 and D = 64: the
    # instructions each executes and where its warps stall, for why the writer wins at one setting only.
    *(ncu(f"ncu_gluon_bwd_writer_d{d}", "_attn_bwd_ws_kernel", 3,
          (*NCU_SECTIONS, "SchedulerStats", "InstructionStats"),
          "{python}", "-m", f"{LAB}.profile", "--S", "4096", "--D", str(d), "--reps", "1", "--bwd", "--backend",
          "gluon_bwd,gluon_bwd@dQ writer warp, two tiles,gluon_bwd@dQ writer warp, two tiles, warpgroup arrive",
          limit_s=150, default=False,
          what=f"ncu on the Gluon backward as committed and with the dQ writer warp's two forms, D = {d}")
      for d in (128, 64)),
    # The Gluon backward's kernel alone (its forward is the persistent Gluon one, which does not tune).
    ncu("ncu_gluon_bwd", "_attn_bwd_ws_kernel", 1,
        (*NCU_SECTIONS, "SchedulerStats", "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables"),
        *PROFILE, "--bwd", "--backend", "gluon_bwd", limit_s=60, default=False,
        what="ncu on the Gluon backward's kernel at the headline shape"),
    # The backward's kernels, FlashAttention-4's beside the Gluon backend's (preprocess, main kernel, dQ's
    # conversion each), forward+backward at the headline shape.
    ncu("ncu_fa4_bwd", "bwd|Backward|dq_convert", 6, (*NCU_SECTIONS, "SchedulerStats"), *PROFILE, "--bwd",
        "--backend", "fa4,gluon_bwd", limit_s=150, default=False,
        what="ncu on FlashAttention-4's and the Gluon backend's backward kernels at the headline shape"),
    # The forwards' kernels, FlashAttention-4's beside the persistent Gluon one, at the headline shape (full).
    ncu("ncu_fa4_fwd", "ForwardSm90|_attn_fwd_ws_kernel", 2, (*NCU_SECTIONS, "SchedulerStats"), *PROFILE,
        "--backend", "fa4,gluon_persistent", limit_s=120, default=False,
        what="ncu on FlashAttention-4's and the persistent Gluon forward's kernels at the headline shape"),
    module("gluon_probe", f"{LAB}.gluon_probe", limit_s=90, default=False,
           what="the Gluon forward's K/V ring depth: checked, then timed (lab numbers, not records)"),
    module("gluon_fwd_settings", f"{LAB}.gluon_probe", "--fwd-settings", limit_s=200, default=False,
           what="settings of the softmax-under-P·V and persistent forwards (lab/gluon_probe.py): checked, then timed"),
    module("gluon_bwd_settings", f"{LAB}.gluon_probe", "--bwd", limit_s=420, default=False,
           what="settings of the Gluon backward (lab/gluon_probe.py): checked, then timed (lab numbers, not records)"),
    gpu_tests("tests", "projects/flash_attention", "-q", "-rfE", limit_s=300),
    # The Gluon forward and backward held to FlashAttention's rule (PASS/FAIL per case; nothing timed).
    module("gluon_quick", f"{LAB}.gluon_check", "--quick", limit_s=120, default=False,
           what="the Gluon forward: headline and ragged shapes, ping-pong on"),
    module("gluon_check", f"{LAB}.gluon_check", limit_s=420, default=False,
           what="the Gluon forward: every case, ping-pong and overlap on and off, and the lean settings"),
    module("gluon_lean", f"{LAB}.gluon_check", "--lean", limit_s=200, default=False,
           what="the Gluon forward's lean synchronisation: every case, in the three lean settings"),
    module("gluon_under_pv", f"{LAB}.gluon_check", "--under-pv", limit_s=150, default=False,
           what="the Gluon forward with the softmax under P·V, then persistent: every case"),
    module("gluon_bwd", f"{LAB}.gluon_bwd_check", limit_s=240, default=False,
           what="the Gluon backward's dQ, dK, dV: every case"),
)
