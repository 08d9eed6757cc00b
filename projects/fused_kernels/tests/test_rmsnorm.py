import math

import pytest
import torch
from gpufolio_projects.fused_kernels import functional as FK
from gpufolio_projects.fused_kernels.modules import RMSNorm
from gpufolio_projects.fused_kernels.tests._ref import check_against_fp64, ref_rmsnorm


def _check(shape, dtype, device="cpu"):
    g = torch.Generator(device=device).manual_seed(sum(shape))
    x = torch.randn(*shape, generator=g, device=device).to(dtype).requires_grad_()
    w = torch.randn(shape[-1], generator=g, device=device).to(dtype).requires_grad_()
    dy = torch.randn(*shape, generator=g, device=device).to(dtype)
    check_against_fp64(FK.rmsnorm, ref_rmsnorm, [x, w], [dy], dtype, ["y", "dx", "dweight"],
                       weight_rows=math.prod(shape[:-1]))


@pytest.mark.parametrize("H", [1000, 4097, 5120, 8191])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_odd_widths(H, dtype):
    _check((3, H), dtype)


def test_batched_leading_dims():
    _check((2, 3, 96), torch.float32)


def test_module_matches_torch():
    m = RMSNorm(200, eps=1e-6)
    with torch.no_grad():
        m.weight.copy_(torch.randn(200))
    ref = torch.nn.RMSNorm(200, eps=1e-6)
    with torch.no_grad():
        ref.weight.copy_(m.weight)
    x = torch.randn(4, 200)
    torch.testing.assert_close(m(x), ref(x), atol=2e-5, rtol=2e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(32768, 4096), (3, 4097, 8191)])
def test_gpu_bf16(shape):
    _check(shape, torch.bfloat16, device="cuda")
