"""The functional entry points refuse bad operands with TypeError/ValueError before any launch, and accept the
awkward-but-valid ones (strided views, zero rows, fp32 weights on half activations) with the right result."""
from __future__ import annotations

import os
import re

import pytest
import torch
from gpufolio_projects.fused_kernels import functional as FK

# CPU tensors are valid input only under the interpreter (conftest switches it on where there is no GPU).
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="CPU tests: TRITON_INTERPRET=1")

F16, F32 = torch.float16, torch.float32


def _r(*shape, dtype=F32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(len(shape))).to(dtype)


def _tokens(n, vocab=16, dtype=torch.int64):
    return torch.arange(n, dtype=dtype) % vocab


# (call, error, what the message says)
REFUSED = [
    (lambda: FK.rmsnorm(_r(3, 8), _r(4)), ValueError, "weight is (4,) but x's last dimension is 8"),
    (lambda: FK.rmsnorm(_r(3, 8), _r(2, 4)), ValueError, "weight must be 1-D"),
    (lambda: FK.rmsnorm(_r(3, 0), _r(0)), ValueError, "H >= 1"),
    (lambda: FK.rmsnorm(torch.tensor(1.0), _r(1)), ValueError, "H >= 1"),
    (lambda: FK.rmsnorm(torch.ones(3, 8, dtype=torch.int32), _r(8)), TypeError, "x is torch.int32"),
    (lambda: FK.rmsnorm(_r(3, 8, dtype=torch.float64), _r(8)), TypeError, "x is torch.float64"),
    (lambda: FK.rmsnorm(_r(3, 8), _r(8).tolist()), TypeError, "weight must be a torch.Tensor"),
    (lambda: FK.rmsnorm(_r(3, 8), _r(8), eps=float("nan")), ValueError, "eps must be"),
    (lambda: FK.rmsnorm(_r(3, 8), _r(8).to("meta")), ValueError, "weight is on meta but x is on cpu"),
    (lambda: FK.add_rmsnorm(_r(3, 8), _r(3, 8, dtype=F16), _r(8)), TypeError, "residual is torch.float16"),
    (lambda: FK.add_rmsnorm(_r(3, 8), _r(8), _r(8)), ValueError, "residual has shape (8,)"),
    (lambda: FK.add_rmsnorm(_r(3, 8), _r(3, 8), _r(3)), ValueError, "weight is (3,)"),
    (lambda: FK.swiglu(_r(3, 8), _r(3, 8, dtype=F16)), TypeError, "up is torch.float16"),
    (lambda: FK.swiglu(_r(3, 8).numpy(), _r(3, 8)), TypeError, "gate must be a torch.Tensor"),
    (lambda: FK.swiglu(_r(3, 8, dtype=torch.float64), _r(3, 8, dtype=torch.float64)), TypeError, "float64"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8), _tokens(4).float()), TypeError, "target is torch.float32"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8), _tokens(4).view(2, 2)), ValueError, "target must be 1-D"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8, dtype=F16), _tokens(4)), TypeError, "weight is torch.float16"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(0, 8), _tokens(4)), ValueError, "weight is empty"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 9), _tokens(4)), ValueError, "hidden sizes differ"),
    (lambda: FK.linear_cross_entropy(_r(2, 4, 8), _r(16, 8), _tokens(4)), ValueError, "x must be 2-D"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8), _tokens(4), label_smoothing=1.5), ValueError,
     "label_smoothing must be in [0, 1]"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8), _tokens(4), max_chunk_bytes=0), ValueError,
     "max_chunk_bytes must be positive"),
    (lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8), _tokens(4).to("meta")), ValueError,
     "target is on meta but x is on cpu"),
]


@pytest.mark.parametrize(("call", "error", "says"), REFUSED, ids=[r[2] for r in REFUSED])
def test_refused_before_launch(call, error, says):
    with pytest.raises(error, match=re.escape(says)):
        call()


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        FK.swiglu(_r(3, 8), _r(3, 8))


# Valid input the checks must let through: (fused call, reference call).
ACCEPTED = [
    ("strided rmsnorm", lambda: FK.rmsnorm(_r(8, 6).t(), _r(8)),
     lambda: torch.nn.functional.rms_norm(_r(8, 6).t(), (8,), _r(8), 1e-6)),
    ("zero rows", lambda: FK.rmsnorm(_r(0, 8), _r(8)), lambda: _r(0, 8)),
    ("fp32 weight, fp16 x", lambda: FK.rmsnorm(_r(3, 8, dtype=F16), _r(8)),
     lambda: torch.nn.functional.rms_norm(_r(3, 8, dtype=F16).float(), (8,), _r(8), 1e-6).half()),
    ("strided swiglu", lambda: FK.swiglu(_r(6, 4).t(), _r(4, 6)),
     lambda: torch.nn.functional.silu(_r(6, 4).t()) * _r(4, 6)),
    ("int32 targets", lambda: FK.linear_cross_entropy(_r(4, 8), _r(16, 8), _tokens(4, dtype=torch.int32)),
     lambda: torch.nn.functional.cross_entropy(_r(4, 8) @ _r(16, 8).t(), _tokens(4))),
]


@pytest.mark.parametrize(("call", "reference"), [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_awkward_but_valid_input_is_accepted(call, reference):
    out, ref = call(), reference()
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, rtol=2e-3, atol=2e-3)
