"""The reference itself: it must match PyTorch's SDPA (math) where they agree, and align causal masks
bottom-right where they do not (SDPA's is_causal is top-left; torch's causal_lower_right is bottom-right)."""
import pytest
import torch
import torch.nn.functional as F
from gpufolio_projects.flash_attention import reference
from gpufolio_projects.flash_attention.reference import reference_attention
from gpufolio_projects.flash_attention.tests.helpers import make_qkv


@pytest.mark.parametrize("causal", [False, True])
def test_matches_sdpa_square(causal):
    q, k, v = make_qkv(2, 4, 4, 33, 33, 16, torch.float32)
    ref = reference_attention(q, k, v, causal)
    assert torch.allclose(ref, F.scaled_dot_product_attention(q, k, v, is_causal=causal), atol=1e-5)


def test_bottom_right_matches_torch_lower_right():
    from torch.nn.attention.bias import causal_lower_right

    q, k, v = make_qkv(1, 2, 2, 20, 50, 16, torch.float32)
    ref = reference_attention(q, k, v, True)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(20, 50))
    assert torch.allclose(ref, sdpa, atol=1e-5)


def test_gqa_matches_repeated_heads():
    q, k, v = make_qkv(1, 6, 2, 17, 17, 16, torch.float32)
    ref = reference_attention(q, k, v, False)
    full = F.scaled_dot_product_attention(q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1))
    assert torch.allclose(ref, full, atol=1e-5)


def test_chunking_keeps_gradients(monkeypatch):
    q, k, v = make_qkv(1, 4, 2, 19, 19, 16, torch.float32)
    do = torch.randn_like(q)
    whole = reference_attention(q, k, v, True, do=do)
    monkeypatch.setattr(reference, "CHUNK_ELEMENTS", 1)  # one KV head per chunk
    chunked = reference_attention(q, k, v, True, do=do)
    for a, b in zip(whole, chunked):
        assert torch.allclose(a, b, atol=1e-6)
