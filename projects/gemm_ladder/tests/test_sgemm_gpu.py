"""Every SGEMM rung against fp64 at awkward shapes, and refusals where it does not claim support (GPU)."""
from __future__ import annotations

import os

import pytest
from gpufolio.api import Unsupported
from gpufolio_projects.gemm_ladder import ladder
from gpufolio_projects.gemm_ladder.lab import sgemm_sweep
from gpufolio_projects.gemm_ladder.sgemm import registry

pytestmark = pytest.mark.gpu

# Ragged in every dimension, a single row (decode-like), ragged with N, K not multiples of 4, small exact tiles,
# K smaller than one K-tile, and a small grid that rung 12 splits 7 ways over a ragged K.
SHAPES = [(4000, 3000, 1000), (1, 4096, 4096), (4097, 4095, 33), (128, 128, 128), (130, 260, 4), (257, 132, 20),
          (200, 520, 1000)]


# Seen twice on the H200 box (rounds 1 and 3 of the first session): the first call that made the binding format
# a refusal message through iostreams (TORCH_CHECK's c10::str, then std::ostringstream in say()) killed the
# process with SIGSEGV. bindings.cpp now builds messages from std::string and std::to_string only. The lab run
# runs the subprocess probe (test_binding_refusal_returns_instead_of_crashing) alone first (stage sgemm_refusal);
# SGEMM_REFUSALS_SAFE=0 skips the in-process refusal checks below, so they cannot take the suite with them.
BINDING_REFUSALS_SAFE = os.environ.get("SGEMM_REFUSALS_SAFE", "1") == "1"
BINDING_REFUSALS_CRASH = "binding-side refusal messages crashed the process on the H200 box (README, the refusal-path crash)"


@pytest.fixture(scope="module")
def ext():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return registry.load()


def _inputs(M, N, K, seed=0):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=gen)
    B = torch.randn(K, N, device="cuda", generator=gen)
    C = torch.full((M, N), float("nan"), device="cuda")
    return A, B, C


def _assert_close(C, A, B):
    ref = A.double() @ B.double()
    tol = ladder.tolerance_for_k(A.shape[1], "float32")
    err = (C.double() - ref).abs()
    bound = tol.atol + tol.rtol * ref.abs()
    assert not C.isnan().any(), "unwritten outputs"
    worst = (err / bound).max().item()
    assert worst <= 1.0, f"max error is {worst:.2f}x the tolerance"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_rung_matches_fp64_or_refuses(ext, rung, shape):
    import torch

    A, B, C = _inputs(*shape)
    try:
        rung.check_shape(*shape)
    except Unsupported:
        if not BINDING_REFUSALS_SAFE:
            pytest.skip(BINDING_REFUSALS_CRASH)  # Python refused it (what the bench relies on)
        with pytest.raises(RuntimeError, match="multiples of 4"):
            ladder.launch(ext, rung, A, B, C)
        assert C.isnan().all(), "a refused call must not launch"
        return
    ladder.launch(ext, rung, A, B, C)
    torch.cuda.synchronize()
    _assert_close(C, A, B)


@pytest.mark.parametrize("shape", [(4000, 3000, 1000), (257, 132, 20)], ids=lambda s: "x".join(map(str, s)))
def test_every_sweep_config_is_correct(ext, shape):
    """The lab's tile sweep (its own extension): every config it times computes the right product."""
    import torch

    sweep = sgemm_sweep.load()
    A, B, _ = _inputs(*shape, seed=1)
    for i in range(sweep.sweep_size()):
        C = torch.full((shape[0], shape[1]), float("nan"), device="cuda")
        sgemm_sweep.sweep(sweep, i, A, B, C)
        torch.cuda.synchronize()
        _assert_close(C, A, B)


def test_split_k_choice_matches_registry(ext):
    for shape in [(1, 4096, 4096), (200, 520, 1000), (4096, 4096, 4096), (128, 4096, 4096)]:
        assert ext.splits12(*shape, 132) == registry.split_k_splits(*shape)


def test_bad_operands_are_refused(ext):
    import torch

    if not BINDING_REFUSALS_SAFE:
        pytest.skip(BINDING_REFUSALS_CRASH)
    A, B, C = _inputs(64, 64, 64)
    with pytest.raises(RuntimeError, match="compose"):
        ladder.launch(ext, registry.by_name("10_warptiling"), A, B[:32].contiguous(), C)
    with pytest.raises(RuntimeError, match="contiguous"):
        ladder.launch(ext, registry.by_name("03_smem_tiling"), A.t(), B, C)
    with pytest.raises(RuntimeError, match="float32"):
        ladder.launch(ext, registry.by_name("01_naive"), A.double(), B, C)
    with pytest.raises(RuntimeError, match="16-byte aligned"):  # a view 4 bytes into its storage
        ladder.launch(ext, registry.by_name("06_vectorize"), A, B, torch.empty(64 * 64 + 1, device="cuda")[1:].view(64, 64))
    assert sgemm_sweep.load().sweep_name(10**6) == ""
    torch.cuda.synchronize()


REFUSAL_PROBE = """
import torch
from gpufolio_projects.gemm_ladder import ladder
from gpufolio_projects.gemm_ladder.sgemm import registry
ext = registry.load()
A, B = torch.randn(64, 33, device="cuda"), torch.randn(33, 63, device="cuda")
C = torch.full((64, 63), float("nan"), device="cuda")
try:
    ladder.launch(ext, registry.by_name("06_vectorize"), A, B, C)
except RuntimeError as e:
    print("refused:", e)
print("untouched:", bool(C.isnan().all()))
"""


@pytest.mark.xfail(not BINDING_REFUSALS_SAFE, reason=BINDING_REFUSALS_CRASH, strict=False)
def test_binding_refusal_returns_instead_of_crashing(ext):
    """The crash, isolated in a subprocess: fails (instead of killing the suite) until the fix is in."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", REFUSAL_PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-2000:]}"
    assert "refused: rung06: needs N and K multiples of 4" in out.stdout and "untouched: True" in out.stdout
