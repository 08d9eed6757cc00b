"""gemm_ladder's lab: the tile sweep and the probe sweep (their own extensions, never compiled into the ladders'),
the profiling entry points for ncu and compute-sanitizer, and the ncu table. The lab stages in ../project.py run
them (``python -m gpufolio lab gemm_ladder``); none of it is a source of published numbers or of the source digest.
"""
