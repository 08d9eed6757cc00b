"""Builds a ladder's CUDA sources into one PyTorch extension, cached across runs.

Why torch.utils.cpp_extension (through ``gpufolio.extension``, which bounds the build in time and clears a lock
an interrupted build left behind): it compiles with ninja in parallel (a cold build of a whole ladder takes
about a minute on the GPU box's 16 cores), caches by source hash in TORCH_EXTENSIONS_DIR (a warm start is
an import), and hands back functions that take torch tensors, so the bench and tests need no ctypes glue.
The kernels themselves are plain CUDA (raw pointers, a stream): nvcc compiles them without torch, which is
how they are compile-checked on machines without a GPU.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Hopper: sm_90a unlocks wgmma / TMA / setmaxnreg. The -gencode spelling is needed: nvcc 13.0's
# `-arch=sm_90a` shorthand also runs a plain sm_90 pass that rejects setmaxnreg.
SM90A_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a",)
COMMON_CUDA_FLAGS = ("-O3", "-std=c++17", "--use_fast_math", "-lineinfo", "-Xptxas=-v")


def build_dir(name: str) -> Path:
    root = Path(os.environ.get("GPUFOLIO_BUILD_DIR", HERE / ".build"))
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=None)
def load_extension(name: str, sources: tuple[str, ...], extra_cuda_cflags: tuple[str, ...] = SM90A_FLAGS):
    """Compile (or load from cache) ``sources`` as extension ``name``; returns the imported module."""
    import torch
    from gpufolio.extension import load

    if not torch.cuda.is_available():
        raise RuntimeError(f"building {name} needs a CUDA GPU and nvcc; this machine has no GPU")
    return load(
        name=name,
        sources=[str(HERE / s) for s in sources],
        extra_cuda_cflags=[*COMMON_CUDA_FLAGS, *extra_cuda_cflags],
        extra_cflags=["-O3"],
        build_directory=build_dir(name),
        verbose=os.environ.get("GPUFOLIO_BUILD_VERBOSE") == "1",
    )
