"""GPU tests (``pytest -m gpu``): bf16/fp16 at realistic sizes against FlashAttention's rule (error vs the fp32
reference at most 2× PyTorch's same-dtype error + slack), every feature: ragged lengths, GQA/MQA, causal with
Sq != Sk, head dims, large magnitudes, and every tuning config of the registry at a ragged shape."""
import pytest
import torch
from gpufolio_projects.flash_attention.kernels.tuning import CONFIGS, interpreting
from gpufolio_projects.flash_attention.tests.helpers import check_flash_rule, make_qkv

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or interpreting(),
                       reason="needs CUDA, with TRITON_INTERPRET unset"),
]

BF16, FP16 = torch.bfloat16, torch.float16


@pytest.fixture(autouse=True)
def _first_config(monkeypatch):
    # Compiling dominates GPU test time: each kernel runs its registry's first config (one compile per dtype,
    # head dim and causal flag). test_every_config pins the others; the bench's gate checks the tuned winners.
    monkeypatch.setenv("GPUFOLIO_FA_NO_TUNE", "1")


def test_errors_on_cuda():
    from gpufolio_projects.flash_attention.attention import flash_attention

    q = torch.randn(1, 2, 64, 64, device="cuda")
    with pytest.raises(TypeError, match="bfloat16"):
        flash_attention(q, q, q)
    with pytest.raises(ValueError, match="head_dim"):
        h = torch.randn(1, 2, 64, 96, device="cuda", dtype=BF16)
        flash_attention(h, h, h)
    with pytest.raises(ValueError, match="one device"):
        b = q.to(BF16)
        flash_attention(b, b.cpu(), b)


def fwd_bwd(q, k, v, causal, scale=None, atomic_dq=False):
    from gpufolio_projects.flash_attention.attention import flash_attention

    out = flash_attention(q, k, v, causal=causal, scale=scale, atomic_dq=atomic_dq)
    do = torch.randn_like(out)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
    return (out.detach(), dq, dk, dv), do


CASES = [  # B, H, Hkv, Sq, Sk, D, causal, dtype
    (2, 16, 16, 2048, 2048, 128, False, BF16),   # the bench's shape class (tunes the same keys)
    (2, 16, 16, 2048, 2048, 128, True, BF16),
    (1, 8, 2, 1000, 1000, 128, True, BF16),      # ragged + GQA
    (1, 8, 1, 777, 1300, 128, True, BF16),       # MQA, causal Sq < Sk (bottom-right), ragged
    (1, 4, 4, 1300, 777, 64, True, FP16),        # causal Sq > Sk: rows without keys
    (2, 8, 8, 1024, 1024, 64, False, FP16),
    (1, 4, 2, 513, 513, 32, True, BF16),
    (1, 4, 4, 640, 640, 256, True, BF16),
]


@pytest.mark.parametrize("B,H,Hkv,Sq,Sk,D,causal,dtype", CASES)
def test_fwd_bwd_flash_rule(B, H, Hkv, Sq, Sk, D, causal, dtype):
    q, k, v = make_qkv(B, H, Hkv, Sq, Sk, D, dtype, device="cuda", grad=True)
    outs, do = fwd_bwd(q, k, v, causal)
    check_flash_rule(outs, q, k, v, causal, do=do)


@pytest.mark.parametrize("causal", [False, True])
def test_large_magnitude(causal):
    q, k, v = make_qkv(1, 8, 8, 1024, 1024, 128, BF16, device="cuda", qk_magnitude=4.0, grad=True)
    outs, do = fwd_bwd(q, k, v, causal)
    check_flash_rule(outs, q, k, v, causal, do=do)


@pytest.mark.parametrize("kernel,D", [(k, d) for d in (128, 64) for k in ("fwd", "bwd_dkdv", "bwd_dq", "bwd_dkdv_atomic")])
def test_every_config(kernel, D):
    """Every config the tuner may pick, pinned, at a ragged causal GQA shape. A config that does not compile
    here (the tuner skips those too) is reported, not failed; a wrong result fails."""
    from gpufolio_projects.flash_attention.kernels.launch import attn_bwd, attn_fwd
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    q, k, v = make_qkv(1, 4, 2, 700, 900, D, BF16, device="cuda")
    do = torch.randn_like(q)
    scale = D ** -0.5
    ran = []
    for cfg in CONFIGS[kernel][D]:
        fwd_cfg = cfg if kernel == "fwd" else None
        try:
            o, lse = attn_fwd(q, k, v, True, scale, config=fwd_cfg)
            if kernel != "fwd":
                kw = {"bwd_dkdv": {"dkdv_config": cfg}, "bwd_dq": {"dq_config": cfg},
                      "bwd_dkdv_atomic": {"dkdv_config": cfg, "atomic_dq": True}}[kernel]
                dq, dk, dv = attn_bwd(do, q, k, v, o, lse, True, scale, **kw)
        except (CompilationError, OutOfResources, RuntimeError) as exc:
            if cfg == CONFIGS[kernel][D][0]:
                raise
            print(f"{kernel} D={D} {cfg}: does not run here ({type(exc).__name__}): skipped, as the tuner does")
            continue
        if kernel == "fwd":
            check_flash_rule(o, q, k, v, True, names=[f"out {cfg}"])
        else:
            check_flash_rule((o, dq, dk, dv), q, k, v, True, do=do,
                             names=[f"{n} {cfg}" for n in ("out", "dq", "dk", "dv")])
        ran.append(str(cfg))
    assert ran


@pytest.mark.parametrize("B,H,Hkv,Sq,Sk,D,causal,dtype", [CASES[0], CASES[1], CASES[3], CASES[4]])
def test_atomic_dq_flash_rule(B, H, Hkv, Sq, Sk, D, causal, dtype):
    q, k, v = make_qkv(B, H, Hkv, Sq, Sk, D, dtype, device="cuda", grad=True)
    outs, do = fwd_bwd(q, k, v, causal, atomic_dq=True)
    check_flash_rule(outs, q, k, v, causal, do=do)
