"""Backward (dq, dk, dv through autograd) against the fp32 reference under TRITON_INTERPRET=1."""
import pytest
import torch
from gpufolio_projects.flash_attention.attention import flash_attention
from gpufolio_projects.flash_attention.kernels.launch import attn_bwd, attn_fwd
from gpufolio_projects.flash_attention.kernels.tuning import KernelConfig, interpreting
from gpufolio_projects.flash_attention.tests.helpers import check_flash_rule, make_qkv

pytestmark = pytest.mark.skipif(not interpreting(), reason="CPU tests: kernels run under TRITON_INTERPRET=1")


FP32, FP16 = torch.float32, torch.float16
CASES = [  # B, H, Hkv, Sq, Sk, D, causal, dtype
    (1, 2, 2, 37, 37, 32, False, FP32),
    (1, 2, 2, 37, 37, 32, True, FP16),
    (1, 2, 2, 70, 70, 32, True, FP32),
    (1, 4, 2, 33, 33, 64, False, FP16),    # GQA: dk/dv sum over the group inside one program
    (1, 4, 1, 33, 50, 32, True, FP32),     # MQA, causal Sq < Sk
    (1, 2, 2, 50, 21, 32, True, FP32),     # causal Sq > Sk: rows with no key get zero gradients
    (1, 2, 2, 50, 21, 32, True, FP16),
    (1, 1, 1, 20, 20, 128, False, FP32),
]


def grads(q, k, v, causal, scale=None, atomic_dq=False):
    out = flash_attention(q, k, v, causal=causal, scale=scale, atomic_dq=atomic_dq)
    do = torch.randn_like(out)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
    return (out.detach(), dq, dk, dv), do


@pytest.mark.parametrize("B,H,Hkv,Sq,Sk,D,causal,dtype", CASES)
def test_backward_matches_reference(B, H, Hkv, Sq, Sk, D, causal, dtype):
    q, k, v = make_qkv(B, H, Hkv, Sq, Sk, D, dtype, grad=True)
    outs, do = grads(q, k, v, causal)
    check_flash_rule(outs, q, k, v, causal, do=do)


ATOMIC_CASES = [CASES[1], CASES[3], CASES[4], CASES[5]]


@pytest.mark.parametrize("B,H,Hkv,Sq,Sk,D,causal,dtype", ATOMIC_CASES)
def test_atomic_dq_backward(B, H, Hkv, Sq, Sk, D, causal, dtype):
    # dQ accumulated by fp32 atomics inside the dK/dV kernel: ragged rows must not leak into the next head.
    q, k, v = make_qkv(B, H, Hkv, Sq, Sk, D, dtype, grad=True)
    outs, do = grads(q, k, v, causal, atomic_dq=True)
    check_flash_rule(outs, q, k, v, causal, do=do)


def test_large_magnitude_backward():
    q, k, v = make_qkv(1, 2, 2, 40, 40, 32, torch.float32, qk_magnitude=6.0, grad=True)
    outs, do = grads(q, k, v, True)
    # dq, dk grow with |k|, |q| (~6×), and so does their fp32 rounding.
    check_flash_rule(outs, q, k, v, True, do=do, slack=1e-4)


@pytest.mark.parametrize("cfg", [(32, 16), (16, 32)])
def test_unequal_blocks_backward(cfg):
    q, k, v = make_qkv(1, 2, 1, 45, 61, 32, torch.float32)
    do = torch.randn_like(q)
    scale = 32 ** -0.5
    o, lse = attn_fwd(q, k, v, True, scale)
    c = KernelConfig(cfg[0], cfg[1], 4, 1)
    dq, dk, dv = attn_bwd(do, q, k, v, o, lse, True, scale, dkdv_config=c, dq_config=c)
    check_flash_rule((o, dq, dk, dv), q, k, v, True, do=do, slack=2e-5)


def test_grad_only_where_needed():
    # k, v frozen: autograd still gets dq right (the Function returns all three; autograd drops the rest).
    q, k, v = make_qkv(1, 2, 2, 30, 30, 32, torch.float32)
    q.requires_grad_(True)
    out = flash_attention(q, k, v, causal=True)
    do = torch.randn_like(out)
    (dq,) = torch.autograd.grad(out, (q,), do)
    from gpufolio_projects.flash_attention.reference import reference_attention

    ref = reference_attention(q, k, v, True, do=do)
    assert (dq - ref[1]).abs().max() < 2e-5
