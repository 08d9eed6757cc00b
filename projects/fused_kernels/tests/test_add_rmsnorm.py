import pytest
import torch
from gpufolio_projects.fused_kernels.ops import add_rmsnorm as arn
from gpufolio_projects.fused_kernels.tests._ref import assert_close, check_against_fp64, leaves, ref_add_rmsnorm


def _check(T, H, dtype, device="cpu", with_dres=True, x_scale=1.0):
    g = torch.Generator(device=device).manual_seed(T * 100003 + H)
    mk = lambda *s: torch.randn(*s, generator=g, device=device).to(dtype)  # noqa: E731
    x, r = (mk(T, H) * x_scale).requires_grad_(), mk(T, H).requires_grad_()
    w = mk(H).requires_grad_()
    dy, dr = mk(T, H), mk(T, H)
    cotangents = [dy, dr] if with_dres else [dy]
    check_against_fp64(arn.add_rmsnorm, ref_add_rmsnorm, [x, r, w], cotangents, dtype,
                       ["y", "residual_out", "dx", "dresidual", "dweight"], weight_rows=T)


@pytest.mark.parametrize("H", [1000, 4097, 5120, 8191])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_odd_widths(H, dtype):
    _check(3, H, dtype)


@pytest.mark.parametrize("T", [1, 17, 33])  # 64-wide rows pack 16 per program: partial last tile
def test_packed_small_rows(T):
    _check(T, 64, torch.float32)


def test_no_gradient_into_residual_out():
    _check(5, 1000, torch.float32, with_dres=False)


def test_large_inputs_do_not_overflow_fp16():
    _check(4, 1000, torch.float16, x_scale=100.0)  # s^2 ~ 1e4 per element: fine in fp32 accumulation


def test_backward_partials_cover_every_row():
    """More row tiles than programs: each program sums a run of tiles into its dweight partial."""
    cfg = arn.LaunchConfig(block_n=128, rows=1, num_warps=4, bwd_num_warps=4, bwd_progs_per_sm=1)  # 4 programs on CPU
    s, w, dy = torch.randn(13, 100), torch.randn(100), torch.randn(13, 100)
    ds, dw = arn.rmsnorm_backward(dy, None, s, w, 1e-6, cfg)
    s64, w64 = leaves(s, w)
    y = s64 * torch.rsqrt(s64.pow(2).mean(-1, keepdim=True) + 1e-6) * w64
    rs, rw = torch.autograd.grad(y, (s64, w64), dy.double())
    assert_close(ds, rs, torch.float32)
    assert_close(dw, rw, torch.float32, scale=4)


def test_config_rules():
    assert arn.launch_config(4096) == arn.LaunchConfig(4096, 1, 8, bwd_num_warps=16)
    assert arn.launch_config(8191).block_n == 8192 and arn.launch_config(8191).num_warps == 16
    assert arn.launch_config(64).rows == 16
    with pytest.raises(ValueError):
        arn.launch_config(70000)


@pytest.mark.gpu
@pytest.mark.parametrize("T,H", [(32768, 4096), (4099, 8191), (1, 5120)])
def test_gpu_bf16(T, H):
    _check(T, H, torch.bfloat16, device="cuda")


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("rows", [1, 4])
def test_backward_prefetch_variants(prefetch, rows):
    """The register double-buffered backward (PREFETCH) gives the same gradients, ragged last tile included."""
    cfg = arn.LaunchConfig(block_n=128, rows=rows, num_warps=4, bwd_num_warps=4, bwd_progs_per_sm=1,
                          bwd_prefetch=prefetch)
    s, w, dy, dr = torch.randn(23, 100), torch.randn(100), torch.randn(23, 100), torch.randn(23, 100)
    ds, dw = arn.rmsnorm_backward(dy, dr, s, w, 1e-6, cfg)
    s64, w64 = leaves(s, w)
    y = s64 * torch.rsqrt(s64.pow(2).mean(-1, keepdim=True) + 1e-6) * w64
    rs, rw = torch.autograd.grad(y, (s64, w64), dy.double())
    assert_close(ds, rs + dr.double(), torch.float32)
    assert_close(dw, rw, torch.float32, scale=5)


def test_only_residual_out_used():
    """y unused: the backward gets dy=None and must pass the residual's gradient straight through."""
    x, r, w = torch.randn(3, 100, requires_grad=True), torch.randn(3, 100, requires_grad=True), torch.randn(100)
    w.requires_grad_()
    _, s = arn.add_rmsnorm(x, r, w)
    dr = torch.randn(3, 100)
    gx, gr, gw = torch.autograd.grad(s, (x, r, w), dr)
    assert torch.equal(gx, dr) and torch.equal(gr, dr) and torch.equal(gw, torch.zeros(100))
