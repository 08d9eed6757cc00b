"""gpufolio: the harness that checks, times and stamps GPU benchmarks, and the generator of the portfolio site.

Flow (../DESIGN): projects/<p>/bench.py -> gpufolio harness -> projects/<p>/results/*.jsonl -> render -> site.
"""
__version__ = "0.1.0"

PROJECTS = (
    "gemm_ladder",
    "flash_attention",
    "fused_kernels",
    "fsdp_mfu",
    "inference_engine",
    "oss_pr_notes",
)
