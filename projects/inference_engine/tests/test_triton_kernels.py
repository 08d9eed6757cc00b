"""Triton kernels under TRITON_INTERPRET=1 (set in conftest) against the PyTorch paths, fp32 and fp16 (the
interpreter's bf16 tl.dot is not trustworthy; bf16 runs in test_gpu.py)."""
import os

import pytest
import torch
from gpufolio_projects.inference_engine.attention import paged_decode_reference
from gpufolio_projects.inference_engine.config import ModelConfig
from gpufolio_projects.inference_engine.model import RMSNorm, RotaryEmbedding
from gpufolio_projects.inference_engine.triton_ops import add_rmsnorm, rope_store, silu_mul
from gpufolio_projects.inference_engine.triton_paged_attention import paged_decode_triton

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="CPU tensors through the Triton interpreter (GPU box: see test_gpu.py)")

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float16: dict(atol=2e-3, rtol=2e-3)}


def _paged_setup(dtype, lens, H, Hkv, D, bs, num_blocks=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    k_cache = torch.randn(num_blocks + 1, bs, Hkv, D, generator=g).to(dtype)
    v_cache = torch.randn(num_blocks + 1, bs, Hkv, D, generator=g).to(dtype)
    W = max(-(-n // bs) for n in lens) + 1
    perm = torch.randperm(num_blocks, generator=g)  # scattered physical blocks
    tables = torch.full((len(lens), W), num_blocks, dtype=torch.int32)
    used = 0
    for i, n in enumerate(lens):
        nb = -(-n // bs)
        tables[i, :nb] = perm[used:used + nb].to(torch.int32)
        used += nb
    q = torch.randn(len(lens), H, D, generator=g).to(dtype)
    return q, k_cache, v_cache, tables, torch.tensor(lens, dtype=torch.int32)


@pytest.mark.parametrize("dtype,H,Hkv", [(torch.float32, 4, 2), (torch.float16, 4, 2), (torch.float16, 8, 1),
                                         (torch.float32, 4, 4)])
def test_paged_decode_kernel_matches_reference(dtype, H, Hkv):
    # context lengths: 1, a block boundary, mid-block, several tiles of BLOCK_N; 0 = a padding row
    lens = [1, 16, 23, 70, 0]
    q, kc, vc, bt, cl = _paged_setup(dtype, lens, H, Hkv, D=16, bs=8)
    out = paged_decode_triton(q, kc, vc, bt, cl, scale=0.25, block_n=16)
    ref = paged_decode_reference(q, kc, vc, bt, cl, scale=0.25)
    torch.testing.assert_close(out.float(), ref.float(), **TOL[dtype])
    assert torch.all(out[-1] == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("with_residual", [False, True])
def test_add_rmsnorm_matches_torch(dtype, with_residual):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 48, generator=g).to(dtype)  # 48: not a power of two, the kernel masks the tail
    r = torch.randn(5, 48, generator=g).to(dtype) if with_residual else None
    norm = RMSNorm(48, 1e-6).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(48, generator=g))
        ref = norm(x, r)
    out = add_rmsnorm(x, r, norm.weight.detach(), 1e-6)
    if with_residual:
        torch.testing.assert_close(out[1], ref[1], atol=0, rtol=0)
        out, ref = out[0], ref[0]
    torch.testing.assert_close(out.float(), ref.float(), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rope_store_matches_torch(dtype):
    cfg = ModelConfig(vocab_size=10, hidden_size=64, intermediate_size=8, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0)
    H, Hkv, D, T, bs = 4, 2, 16, 6, 4
    rope = RotaryEmbedding(cfg, 64)
    g = torch.Generator().manual_seed(2)
    qkv = torch.randn(T, (H + 2 * Hkv) * D, generator=g).to(dtype)
    positions = torch.tensor([0, 1, 2, 17, 40, 63])
    slots = torch.tensor([5, 0, 9, 31, 12, 20])
    kc, vc = torch.zeros(8, bs, Hkv, D, dtype=dtype), torch.zeros(8, bs, Hkv, D, dtype=dtype)
    q, k_out = rope_store(qkv, positions, rope.cos_sin, slots, kc, vc, H, Hkv, D, return_k=True)
    q_ref, k_ref = rope(positions, qkv[:, :H * D].reshape(T, H, D), qkv[:, H * D:(H + Hkv) * D].reshape(T, Hkv, D))
    v_ref = qkv[:, (H + Hkv) * D:].reshape(T, Hkv, D)
    torch.testing.assert_close(q.float(), q_ref.float(), **TOL[dtype])
    torch.testing.assert_close(k_out.float(), k_ref.float(), **TOL[dtype])
    torch.testing.assert_close(kc.view(-1, Hkv, D)[slots].float(), k_ref.float(), **TOL[dtype])
    torch.testing.assert_close(vc.view(-1, Hkv, D)[slots], v_ref, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_silu_mul_matches_torch(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 2 * 1100, generator=g).to(dtype)  # 1100 > one 1024 tile: the second tile is masked
    gate, up = x.chunk(2, dim=-1)
    ref = torch.nn.functional.silu(gate) * up
    torch.testing.assert_close(silu_mul(x).float(), ref.float(), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rope_paged_decode_matches_rope_store_then_reference(dtype):
    """The decode kernel that rotates q and k and stores K/V itself, against rope_store + the reference
    attention: same output, same cache contents. Contexts 1 (only the current token), a block boundary,
    several BLOCK_N tiles (the first one loaded ahead of the rest)."""
    from gpufolio_projects.inference_engine.triton_paged_attention import rope_paged_decode_triton

    H, Hkv, D, bs = 4, 2, 32, 8
    lens = [1, 9, 40]
    _, kc, vc, bt, cl = _paged_setup(dtype, lens, H, Hkv, D, bs)
    g = torch.Generator().manual_seed(5)
    qkv = torch.randn(len(lens), (H + 2 * Hkv) * D, generator=g).to(dtype)
    pos = cl.long() - 1
    cfg = ModelConfig(vocab_size=32, hidden_size=H * D, num_attention_heads=H, num_key_value_heads=Hkv,
                      rope_theta=10000.0)
    cos_sin = RotaryEmbedding(cfg, 64).cos_sin
    kc2, vc2 = kc.clone(), vc.clone()
    out = rope_paged_decode_triton(qkv, pos, cos_sin, kc, vc, bt, cl, 0.3, H, block_n=16)
    slots = bt.gather(1, (pos // bs)[:, None].to(torch.int64))[:, 0].long() * bs + pos % bs
    q, _ = rope_store(qkv, pos, cos_sin, slots, kc2, vc2, H, Hkv, D)
    ref = paged_decode_reference(q, kc2, vc2, bt, cl, scale=0.3)
    torch.testing.assert_close(kc, kc2, atol=0, rtol=0)
    torch.testing.assert_close(vc, vc2, atol=0, rtol=0)
    torch.testing.assert_close(out.float(), ref.float(), **TOL[dtype])


@pytest.mark.parametrize("V", [97, 2048, 5000])
def test_greedy_argmax_matches_torch_including_ties(V):
    """The two-stage argmax against torch.argmax: random rows, a row whose maximum appears twice in different
    blocks (the first wins), a row of -inf but one entry, and a row of equal values."""
    from gpufolio_projects.inference_engine.triton_ops import greedy_argmax

    g = torch.Generator().manual_seed(V)
    x = torch.randn(5, V, generator=g)
    x[1, V // 3] = x[1, -1] = 100.0
    x[2] = float("-inf")
    x[2, V - 2] = 0.0
    x[3] = 1.5
    assert greedy_argmax(x, block=64).tolist() == x.argmax(-1).tolist()
    assert greedy_argmax(x).tolist() == x.argmax(-1).tolist()
    h = x.half()  # greedy decode at large batch skips the fp32 copy of the logits
    assert greedy_argmax(h, block=64).tolist() == h.argmax(-1).tolist()
