"""Compile a Triton kernel for sm_90 on a machine without a GPU, for tests that check what the compiler emitted
(vector widths, the order of loads and barriers) instead of timing it.

The interpreter must be off for ``triton.compile``, and it is read at import, so the compile runs in a child
process: ``run_compile_script(script)`` returns that script's stdout. Where the toolchain cannot finish (no
nvidia backend, no ptxas) it raises ``CompileUnavailable``, a ``unittest.SkipTest``: a test that calls it is
skipped by pytest with the reason, with no test framework imported here. Any other failure is a RuntimeError
carrying the child's stderr.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import unittest


class CompileUnavailable(unittest.SkipTest):
    """This machine cannot finish a Triton compile for sm_90 (no nvidia backend, no ptxas)."""


def run_compile_script(script: str, timeout_s: int = 300) -> str:
    try:
        has_backend = importlib.util.find_spec("triton.backends.nvidia") is not None
    except ModuleNotFoundError:  # no triton at all
        has_backend = False
    if not has_backend:
        raise CompileUnavailable("triton has no nvidia backend here")
    env = dict(os.environ, TRITON_INTERPRET="0", CUDA_VISIBLE_DEVICES="")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout_s)
    if res.returncode and "ptxas" in res.stderr:
        raise CompileUnavailable(f"no ptxas to finish the compile: {res.stderr[-200:]}")
    if res.returncode:
        raise RuntimeError(f"compile script failed (rc {res.returncode}): {res.stderr[-2000:]}")
    return res.stdout
