"""Compile a Triton kernel for sm_90 on a machine without a GPU, for tests that check what the compiler emitted
(vector widths, the order of loads and barriers) instead of timing it.

The interpreter must be off for ``triton.compile``, and it is read at import, so the compile runs in a child
process: ``run_compile_script(script)`` returns that script's stdout. It skips the calling test where the
toolchain cannot finish (no nvidia backend, no ptxas) and fails it on any other error.
"""
from __future__ import annotations

import os
import subprocess
import sys


def run_compile_script(script: str, timeout_s: int = 300) -> str:
    import pytest

    pytest.importorskip("triton.backends.nvidia")
    env = dict(os.environ, TRITON_INTERPRET="0", CUDA_VISIBLE_DEVICES="")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout_s)
    if res.returncode and "ptxas" in res.stderr:
        pytest.skip(f"no ptxas to finish the compile: {res.stderr[-200:]}")
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout
