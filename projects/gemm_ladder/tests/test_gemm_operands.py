"""Both ladders' ops.gemm refuse bad operands with TypeError/ValueError before the extension is built or
called; on CPU, where the last check (CUDA) refuses even good operands, every other check is reached first."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from gpufolio_projects.gemm_ladder import build  # noqa: E402
from gpufolio_projects.gemm_ladder.bf16 import ops as bf16_ops  # noqa: E402
from gpufolio_projects.gemm_ladder.sgemm import ops as sgemm_ops  # noqa: E402

F32, BF16 = torch.float32, torch.bfloat16


def _never_built(*args, **kwargs):
    raise AssertionError("the extension was loaded: validation must come first")


@pytest.fixture(autouse=True)
def no_extension(monkeypatch):
    monkeypatch.setattr(build, "load_extension", _never_built)


def _t(*shape, dtype):
    return torch.randn(*shape).to(dtype)


# (ladder, A, B, out, error, message); sgemm computes A[M,K] @ B[K,N], bf16 A[M,K] @ B[N,K]^T.
CASES = [
    ("sgemm", _t(8, 4, dtype=F32), _t(4, 8, dtype=F32), None, ValueError, "supported: cuda"),  # all good but CPU
    ("sgemm", _t(8, 4, dtype=F32).numpy(), _t(4, 8, dtype=F32), None, TypeError, "A must be a torch.Tensor"),
    ("sgemm", _t(8, 4, dtype=torch.float64), _t(4, 8, dtype=F32), None, TypeError, "A is torch.float64"),
    ("sgemm", _t(8, 4, dtype=F32), _t(4, 8, dtype=BF16), None, TypeError, "B is torch.bfloat16"),
    ("sgemm", _t(8, 4, dtype=F32), _t(8, 4, dtype=F32).t(), None, ValueError, "B must be contiguous"),
    ("sgemm", _t(2, 8, 4, dtype=F32), _t(4, 8, dtype=F32), None, ValueError, "A must be 2-D"),
    ("sgemm", _t(8, 4, dtype=F32), _t(5, 8, dtype=F32), None, ValueError, "B must be [K, N]"),
    ("sgemm", _t(0, 4, dtype=F32), _t(4, 8, dtype=F32), None, ValueError, "A is empty"),
    ("sgemm", _t(8, 0, dtype=F32), _t(0, 8, dtype=F32), None, ValueError, "A is empty"),
    ("sgemm", _t(8, 4, dtype=F32), _t(4, 8, dtype=F32), _t(8, 9, dtype=F32), ValueError, "out is (8, 9)"),
    ("sgemm", _t(8, 4, dtype=F32), _t(4, 8, dtype=F32), _t(8, 8, dtype=BF16), TypeError, "out is torch.bfloat16"),
    ("sgemm", _t(8, 4, dtype=F32), _t(4, 8, dtype=F32), _t(8, 8, dtype=F32).t(), ValueError, "out must be contig"),
    ("sgemm", _t(8, 4, dtype=F32), _t(4, 8, dtype=F32).to("meta"), None, ValueError, "B is on meta but A is on cpu"),
    ("bf16", _t(8, 16, dtype=BF16), _t(8, 16, dtype=BF16), None, ValueError, "supported: cuda"),
    ("bf16", _t(8, 16, dtype=F32), _t(8, 16, dtype=BF16), None, TypeError, "A is torch.float32"),
    ("bf16", _t(8, 16, dtype=BF16), [[1.0]], None, TypeError, "B must be a torch.Tensor"),
    ("bf16", _t(8, 16, dtype=BF16), _t(16, 8, dtype=BF16), None, ValueError, "B must be [N, K]"),
    ("bf16", _t(8, 16, dtype=BF16), _t(16, 8, dtype=BF16).t(), None, ValueError, "B must be contiguous"),
    ("bf16", _t(8, 16, dtype=BF16), _t(0, 16, dtype=BF16), None, ValueError, "B is empty"),
    ("bf16", _t(16, dtype=BF16), _t(8, 16, dtype=BF16), None, ValueError, "A must be 2-D"),
    ("bf16", _t(8, 16, dtype=BF16), _t(8, 16, dtype=BF16), _t(8, 16, dtype=BF16), ValueError, "out is (8, 16)"),
]


@pytest.mark.parametrize(("ladder", "A", "B", "out", "error", "says"), CASES,
                         ids=[f"{c[0]}-{c[5]}" for c in CASES])
def test_bad_operands_are_refused_before_the_extension_loads(ladder, A, B, out, error, says):
    gemm = sgemm_ops.gemm if ladder == "sgemm" else bf16_ops.gemm
    rung = "10_warptiling" if ladder == "sgemm" else "05_warp_specialized"
    with pytest.raises(error, match=re.escape(says)):
        gemm(rung, A, B, out=out)


def test_unknown_rung():
    with pytest.raises(KeyError):
        sgemm_ops.gemm("99_nope", _t(8, 4, dtype=F32), _t(4, 8, dtype=F32))
