"""The kernel the Liger patch adds (repro/port.py): Liger's math in every casting mode, and the same text as the patch.

On CPU it runs under the Triton interpreter in fp16/fp32 (the interpreter's bf16 arithmetic is wrong); the GPU
test compares it with Liger's own row kernel in bf16 too.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before port.py imports triton

NOTE_DIR = Path(__file__).resolve().parents[1] / "notes" / "liger_fused_add_rmsnorm"
PORT = "gpufolio_projects.oss_pr_notes.notes.liger_fused_add_rmsnorm.repro.port"


def _port():
    import importlib

    return importlib.import_module(PORT)


def liger_math(X, R, W, eps, offset, mode):
    """Liger's row kernel, step by step in torch: the add in the input dtype, then each casting mode's casts."""
    S = X + R
    if mode == "none":
        rstd = torch.rsqrt(S.square().mean(-1, keepdim=True) + eps)
        return S * rstd * (offset + W), S, rstd.squeeze(-1)
    Sf = S.float()
    rstd = torch.rsqrt(Sf.square().mean(-1, keepdim=True) + eps)
    if mode == "llama":
        Y = (Sf * rstd).to(S.dtype) * (offset + W)
    else:  # gemma: everything in fp32, one cast at the end
        Y = (Sf * rstd * (offset + W.float())).to(S.dtype)
    return Y, S, rstd.squeeze(-1)


def _inputs(M, N, dtype, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    X = torch.randn(M, N, generator=g).to(device=device, dtype=dtype)
    R = torch.randn(M, N, generator=g).to(device=device, dtype=dtype)
    W = (1 + 0.1 * torch.randn(N, generator=g)).to(device=device, dtype=dtype)
    return X, R, W


# (rows, width): a ragged last program (37 rows, 16 per program), odd widths (200, 1000), 2 rows per program (2048)
SHAPES = [(37, 200), (5, 1000), (64, 128), (3, 2048)]


@pytest.mark.parametrize("mode, offset", [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("M, N", SHAPES)
def test_block_kernel_matches_liger_math(M, N, dtype, mode, offset):
    port = _port()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    X, R, W = _inputs(M, N, getattr(torch, dtype), device)
    Y, S, RSTD = port.block_forward(X, R, W, 1e-6, offset, mode)
    Ye, Se, Re = liger_math(X, R, W, 1e-6, offset, mode)
    assert torch.equal(S, Se)  # the new residual is the correctly rounded sum, bit for bit
    assert RSTD.dtype == (torch.float32 if mode != "none" else X.dtype)  # what Liger's backward expects
    ulp = torch.finfo(X.dtype).eps
    torch.testing.assert_close(RSTD.float(), Re.float(), rtol=4 * ulp if mode == "none" else 1e-6, atol=0)
    # a few roundings of the output dtype apart at most: the row sum's order differs from torch's, and rstd's
    # last bit moves every element of the row
    torch.testing.assert_close(Y.float(), Ye.float(), rtol=4 * ulp, atol=ulp)


def test_rows_per_program_follows_the_width():
    port = _port()
    assert [port.rows_per_program(n) for n in (64, 123, 256, 896, 1024, 2048, 4096, 8192)] == [16, 16, 16, 4, 4, 2, 1, 1]


def test_patch_adds_exactly_the_measured_kernel():
    """Every line between the port's patch markers is an added line of the patch, in order, in Liger's file."""
    src = (NOTE_DIR / "repro" / "port.py").read_text()
    kernel = src.split("# --- patch: kernel begin ---\n")[1].split("# --- patch: kernel end ---\n")[0].splitlines()
    patch = (NOTE_DIR / "fused-add-rmsnorm-block-forward.patch").read_text()
    liger_file = patch.split("+++ b/src/liger_kernel/ops/fused_add_rms_norm.py\n")[1].split("\ndiff --git")[0]
    added = [line[1:] for line in liger_file.splitlines() if line.startswith("+")]
    start = added.index(kernel[0])
    assert added[start:start + len(kernel)] == kernel
    # and the launcher takes the block path only for narrow rows, on CUDA, before the unchanged row launch
    assert "+    if BLOCK_ROW > 1 and X.device.type == \"cuda\":" in liger_file
    assert "-    # TODO: add _block_fused_add_rms_norm_forward_kernel" in liger_file


# bf16 (what training runs) in every casting mode and at the widths the bench measures; fp16/fp32 once each.
# Few cases on purpose: each one compiles two kernels on the GPU box.
GPU_CASES = [(M, N, "bfloat16", mode, offset) for (M, N) in [(37, 200), (4096, 896)]
             for mode, offset in [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)]]
GPU_CASES += [(3, 2048, "bfloat16", "llama", 0.0), (32768, 1024, "bfloat16", "llama", 0.0),
              (37, 200, "float16", "llama", 0.0), (3, 2048, "float32", "gemma", 1.0)]


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, dtype, mode, offset", GPU_CASES)
def test_block_kernel_matches_liger_row_kernel_on_gpu(M, N, dtype, mode, offset):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    fa = pytest.importorskip("liger_kernel.ops.fused_add_rms_norm")
    port = _port()
    X, R, W = _inputs(M, N, getattr(torch, dtype), "cuda")
    Y, S, RSTD = port.block_forward(X, R, W, 1e-6, offset, mode)
    Yl, Sl, Rl = fa.fused_add_rms_norm_forward(X, R, W, 1e-6, offset, mode)[:3]
    assert torch.equal(S, Sl)
    # Liger's backward reads RSTD: the block kernel must leave the same one (to fp32 reduction order)
    ulp = torch.finfo(X.dtype).eps
    torch.testing.assert_close(RSTD.float(), Rl.float(), rtol=4 * ulp if mode == "none" else 1e-6, atol=0)
    torch.testing.assert_close(Y.float(), Yl.float(), rtol=4 * ulp, atol=ulp)
