"""fsdp_mfu's lab: tuning, profiling and plotting entry points run by the lab stages in ../project.py
(`python -m gpufolio lab fsdp_mfu`); nothing in the bench imports them, so they are no source of its numbers.
"""
