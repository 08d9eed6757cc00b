"""fused_kernels's lab: tuning, profiling and plotting entry points run by the lab stages in ../project.py
(`python -m gpufolio lab fused_kernels`); nothing in the bench imports them, so they are no source of its numbers.
"""
