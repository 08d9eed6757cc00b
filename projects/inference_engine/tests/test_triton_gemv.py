"""The fused decode GEMV (triton_gemv.fused_linear) under TRITON_INTERPRET=1 against the unfused PyTorch ops,
fp32 and fp16 (bf16 runs in test_gpu.py): plain, with the RMSNorm prologue, the residual epilogue (in place),
the SiLU·mul epilogue, fp32 logits out; M from 1 to 16, N and K that are not multiples of the tiles."""
import os

import pytest
import torch
from gpufolio_projects.inference_engine.model import RMSNorm
from gpufolio_projects.inference_engine.triton_gemv import fused_linear
from torch.nn import functional as F

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="CPU tensors through the Triton interpreter (GPU box: see test_gpu.py)")

TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.float16: dict(atol=4e-3, rtol=4e-3)}
# launch configs that reach each code path at test sizes: tl.dot over several K tiles; M = 1 on CUDA cores
# looping over K tiles; M = 1 with the whole row in one tile (one shot, K masked up to 128); the defaults
CONFIGS = {"dot": dict(BLOCK_N=16, BLOCK_K=32, USE_DOT=True), "loop": dict(BLOCK_N=16, BLOCK_K=32, USE_DOT=False),
           "one_shot": dict(BLOCK_N=8, BLOCK_K=128, USE_DOT=False), "default": None}


def _config(name, M):
    cfg = CONFIGS[name]
    if cfg is not None and not cfg["USE_DOT"] and M > 1:
        pytest.skip("CUDA-core configs take one row")
    return cfg


def _data(dtype, M, N, K, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, K, generator=g).to(dtype)
    w = (torch.randn(N, K, generator=g) / K ** 0.5).to(dtype)
    return x, w, g


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("M,N,K", [(1, 48, 64), (1, 40, 72), (3, 40, 72), (16, 33, 96)])
def test_plain_and_residual(dtype, M, N, K, name):
    cfg = _config(name, M)
    x, w, g = _data(dtype, M, N, K)
    torch.testing.assert_close(fused_linear(x, w, config=cfg).float(), F.linear(x, w).float(), **TOL[dtype])
    h = torch.randn(M, N, generator=g).to(dtype)
    expect = F.linear(x, w) + h  # the PyTorch path: projection rounded, then the add rounded
    out = fused_linear(x, w, residual=h, config=cfg)
    assert out.data_ptr() == h.data_ptr()
    torch.testing.assert_close(h.float(), expect.float(), **TOL[dtype])


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("M,K", [(1, 64), (1, 72), (5, 72)])
def test_norm_prologue_silu_mul_and_fp32_out(dtype, M, K, name):
    cfg = _config(name, M)
    N = 80
    h, w, g = _data(dtype, M, 2 * N, K, seed=1)
    norm = RMSNorm(K, 1e-6).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(K, generator=g))
        xn = norm(h)
    a, b = F.linear(xn, w).chunk(2, dim=-1)
    expect = F.silu(a) * b
    out = fused_linear(h, w, norm_weight=norm.weight.detach(), eps=1e-6, silu_mul=True, config=cfg)
    torch.testing.assert_close(out.float(), expect.float(), **TOL[dtype])
    logits = fused_linear(h, w, norm_weight=norm.weight.detach(), eps=1e-6, out_dtype=torch.float32, config=cfg)
    assert logits.dtype == torch.float32
    torch.testing.assert_close(logits, F.linear(xn, w).float(), **TOL[dtype])


def test_refuses_what_it_cannot_do():
    x, w, _ = _data(torch.float32, 17, 16, 32)
    with pytest.raises(ValueError):
        fused_linear(x, w)
    with pytest.raises(ValueError):
        fused_linear(x[:2], w, residual=torch.zeros(2, 16), silu_mul=True)
    with pytest.raises(ValueError, match="one row"):
        fused_linear(x[:2], w, config=CONFIGS["loop"])


def test_tuned_configs_are_well_formed():
    """gemv_configs.json (written by profile_decode's sweep) holds launchable M = 1 configs keyed by shape."""
    from gpufolio_projects.inference_engine import triton_gemv

    if not os.path.exists(triton_gemv.CONFIG_FILE):
        pytest.skip("no sweep committed yet: default_config serves every shape")
    assert triton_gemv.TUNED, "gemv_configs.json has no configs"
    for key, cfg in triton_gemv.TUNED.items():
        n_out, k = key.split(":")[0].split("x")
        assert int(n_out) > 0 and int(k) > 0
        assert set(cfg) == {"BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "USE_DOT"}, key
        assert cfg["USE_DOT"] is False and cfg["BLOCK_K"] & (cfg["BLOCK_K"] - 1) == 0, key
