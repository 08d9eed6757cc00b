"""inference_engine's lab: tuning, profiling and plotting entry points run by the lab stages in ../project.py
(`python -m gpufolio lab inference_engine`); nothing in the bench imports them, so they are no source of its numbers.
"""
