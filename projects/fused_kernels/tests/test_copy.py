import pytest
import torch
from gpufolio_projects.fused_kernels.ops.copy import triton_copy


@pytest.mark.parametrize("numel", [1, 4095, 4096, 10007, 3 * 4096 + 17])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_copy_exact_including_tail(numel, dtype):
    src = torch.randn(numel).to(dtype)
    dst = torch.full_like(src, float("nan"))
    assert triton_copy(src, dst) is dst
    assert torch.equal(dst, src)


def test_copy_refuses_mismatch():
    with pytest.raises(ValueError):
        triton_copy(torch.randn(10), torch.empty(11))
    with pytest.raises(ValueError):
        triton_copy(torch.randn(4, 4).t(), torch.empty(16))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_copy_gpu_large(dtype):
    src = torch.randn(2**26 + 5, device="cuda").to(dtype)
    dst = torch.full_like(src, float("nan"))
    triton_copy(src, dst)
    assert torch.equal(dst, src)
