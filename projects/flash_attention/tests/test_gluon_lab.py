"""The lab's Gluon forward (``lab/gluon_fwd.py``): on CPU, that it imports without a GPU and refuses what it
cannot run with one clear line; on a Hopper GPU (``gpu``), that it passes FlashAttention's rule on a ragged
shape. Its full check is ``lab/gluon_check``; it is written against triton 3.6's Gluon."""
import pytest
import torch
from gpufolio_projects.flash_attention.lab import gluon_fwd
from gpufolio_projects.flash_attention.tests.helpers import check_flash_rule, make_qkv


def _is_hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def test_refuses_a_non_hopper_device():
    q = torch.randn(1, 2, 64, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="Hopper"):
        gluon_fwd.gluon_attention_fwd(q, q, q)


def test_refuses_an_unsupported_head_dim():
    with pytest.raises(ValueError, match="head dim 96"):
        gluon_fwd.kernel_args(96, causal=False, pingpong=True)


@pytest.mark.gpu
@pytest.mark.skipif(not _is_hopper(), reason="needs a Hopper GPU (sm_90a)")
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_ragged_shape_passes_the_flash_rule(causal, overlap):
    q, k, v = make_qkv(2, 3, 3, 333, 333, 128, torch.bfloat16, device="cuda")
    out, _ = gluon_fwd.gluon_attention_fwd(q, k, v, causal=causal, overlap=overlap)
    check_flash_rule(out, q, k, v, causal)
