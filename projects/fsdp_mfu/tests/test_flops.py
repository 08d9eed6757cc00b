"""The FLOPs formula against torch.utils.flop_counter on small configs (math SDPA so attention is two bmm's)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from gpufolio_projects.fsdp_mfu.configs import ModelConfig  # noqa: E402
from gpufolio_projects.fsdp_mfu.flops import flops_per_token, matmul_params, mfu, peak_flops  # noqa: E402
from gpufolio_projects.fsdp_mfu.model import Transformer  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402


@pytest.mark.parametrize("kv_heads,T,fused_proj", [(4, 48, False), (2, 64, False), (1, 40, False), (2, 64, True)])
def test_formula_matches_flop_counter(kv_heads, T, fused_proj):
    # odd-ish sizes: ffn 96 != 8/3 dim, T not a power of two, GQA and MQA; fused projections: the same FLOPs
    cfg = ModelConfig("f", dim=64, n_layers=3, n_heads=4, n_kv_heads=kv_heads, ffn_dim=96, vocab_size=300,
                      max_seq_len=128)
    model = Transformer(cfg, fused_proj=fused_proj)
    B = 3
    tokens = torch.randint(0, cfg.vocab_size, (B, T))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(tokens, tokens).backward()
    expected = flops_per_token(cfg, T).model * B * T
    assert counter.get_total_flops() == expected


def test_recompute_flops_match_counter_under_checkpointing():
    cfg = ModelConfig("f", dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=96, vocab_size=300, max_seq_len=64)
    model = Transformer(cfg)
    for block in model.layers.values():
        block.checkpointed = True
    tokens = torch.randint(0, cfg.vocab_size, (2, 32))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(tokens, tokens).backward()
    assert counter.get_total_flops() == flops_per_token(cfg, 32, activation_checkpointing=True).hardware * 64


def test_itemisation():
    cfg = ModelConfig("f", dim=128, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=256, vocab_size=1000)
    f = flops_per_token(cfg, 256)
    # the embedding table and norm gains are not matmul weights
    assert matmul_params(cfg) == cfg.num_params() - cfg.embedding_params() - (2 * cfg.n_layers + 1) * cfg.dim
    assert f.dense == 6 * matmul_params(cfg)
    assert f.attention == 12 * 2 * 4 * 32 * 256
    assert f.attention_causal == pytest.approx(f.attention * 257 / 512)
    assert f.recompute == 0 and f.hardware == f.model


def test_peaks_are_cited_and_unknown_cards_refused():
    assert peak_flops("NVIDIA H200") == 989e12
    assert peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    for unlisted in ("NVIDIA GeForce RTX 4090", "NVIDIA H100 PCIe", "NVIDIA H200 NVL"):  # lower peaks: no guess
        with pytest.raises(KeyError):
            peak_flops(unlisted)
    assert mfu(6e9, 1e5, 1, 989e12) == pytest.approx(6e14 / 989e12)
