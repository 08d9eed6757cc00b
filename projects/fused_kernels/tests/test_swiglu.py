import pytest
import torch
import torch.nn.functional as F
from gpufolio_projects.fused_kernels import functional as FK
from gpufolio_projects.fused_kernels.tests._ref import assert_close, leaves


def _check(shape, dtype, device="cpu", gate_scale=1.0):
    gen = torch.Generator(device=device).manual_seed(sum(shape))
    mk = lambda: torch.randn(*shape, generator=gen, device=device).to(dtype)  # noqa: E731
    g, u, dh = (mk() * gate_scale).requires_grad_(), mk().requires_grad_(), mk()
    h = FK.swiglu(g, u)
    dg, du = torch.autograd.grad(h, (g, u), dh)
    g64, u64 = leaves(g, u)
    h64 = F.silu(g64) * u64
    rg, ru = torch.autograd.grad(h64, (g64, u64), dh.double())
    assert_close(h, h64, dtype, name="h")
    assert_close(dg, rg, dtype, name="dgate")
    assert_close(du, ru, dtype, name="dup")


@pytest.mark.parametrize("shape", [(3, 1000), (2, 4097), (1, 5120), (2, 8191), (4097,)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_shapes(shape, dtype):
    _check(shape, dtype)


@pytest.mark.parametrize("block", [1024, 2048])
def test_even_split_has_no_mask(block):
    """numel a multiple of BLOCK takes the mask-free kernels (EVEN); checked against the same reference."""
    from gpufolio_projects.fused_kernels.ops import swiglu as sw

    assert sw._launch(4 * 1024, block)[1]["EVEN"] and not sw._launch(4 * 1024 + 1, block)[1]["EVEN"]
    _check((4, 1024), torch.float32)


def test_offsets_switch_to_64_bit_past_int32():
    from gpufolio_projects.fused_kernels.ops import swiglu as sw

    assert not sw._launch(32768 * 8192, 2048)[1]["INT64"]
    assert sw._launch(2**31, 2048)[1]["INT64"] and sw._launch(2**31 - 5, 2048)[1]["INT64"]


def test_saturated_gates():
    """|gate| ~ 30: sigmoid is 0 or 1 in fp32; the gradient must stay finite and match."""
    _check((2, 1000), torch.float32, gate_scale=30.0)


def test_refuses_mismatched_shapes():
    with pytest.raises(ValueError):
        FK.swiglu(torch.randn(2, 3), torch.randn(3, 2))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(32768, 8192), (4099, 14336)])
def test_gpu_bf16(shape):
    _check(shape, torch.bfloat16, device="cuda")
