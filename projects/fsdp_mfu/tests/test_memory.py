"""Memory formulas: the activation counts against what autograd actually saves (saved_tensors_hooks), and the
state accounting of each mode."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpufolio_projects.fsdp_mfu.configs import ModelConfig, get_config  # noqa: E402
from gpufolio_projects.fsdp_mfu.memory import head_saved, predict, saved_per_layer, setting  # noqa: E402
from gpufolio_projects.fsdp_mfu.model import Transformer  # noqa: E402


def saved_bytes(model, tokens, targets, autocast: bool) -> tuple[int, int]:
    """(activation bytes, bf16 weight-copy bytes) saved for backward: distinct storages, parameters excluded."""
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    # autocast saves each weight's bf16 cast (transposed, as the matmul reads it)
    weight_shapes = {tuple(p.shape) for p in model.parameters() if p.ndim == 2}
    weight_shapes |= {s[::-1] for s in weight_shapes}
    acts: dict[int, int] = {}
    weights: dict[int, int] = {}

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in own:
            is_weight_cast = autocast and t.dtype == torch.bfloat16 and tuple(t.shape) in weight_shapes and t.ndim == 2
            (weights if is_weight_cast else acts)[key] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            model(tokens, targets)
    return sum(acts.values()), sum(weights.values())


# B*T=5*24=120 rows: no activation shares a shape with a weight, so the casts are told apart
CFG = ModelConfig("m", dim=128, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=200, vocab_size=500, max_seq_len=64)


@pytest.mark.parametrize("fused_proj", [False, True])
@pytest.mark.parametrize("mode,dtype", [("fsdp2", "bfloat16"), ("single", "bfloat16"), ("single", "float32")])
def test_eager_saved_activations_match_formula(mode, dtype, fused_proj):
    torch.manual_seed(0)
    model = Transformer(CFG, fused_proj=fused_proj)
    s = setting(mode, dtype, compiled=False)
    if mode == "fsdp2":  # what FSDP2's MixedPrecisionPolicy computes with: bf16 parameters
        model = model.to(torch.bfloat16)
        model.rope_cos.data, model.rope_sin.data = model.rope_cos.float(), model.rope_sin.float()
    B, T = 5, 24
    tokens = torch.randint(0, CFG.vocab_size, (B, T))
    targets = torch.randint(0, CFG.vocab_size, (B, T))  # its own storage: counted apart from the tokens
    acts, weights = saved_bytes(model, tokens, targets, autocast=s.autocast)
    # + 4: the 0-dim loss that autograd keeps for the mean's backward
    assert acts == B * T * (CFG.n_layers * saved_per_layer(CFG, s, fused_proj) + head_saved(CFG, s)) + 4
    matmul_weights = CFG.n_layers * (CFG.attn_params() + CFG.mlp_params()) + CFG.vocab_size * CFG.dim
    assert weights == (2 * matmul_weights if s.autocast else 0)


def test_state_bytes_per_param():
    cfg = get_config("llama_1b")
    n = cfg.num_params()
    single = predict(cfg, 8, 2048, mode="single", compiled=True)
    assert single.params + single.grads + single.optimizer == 16 * n  # the classic 16 bytes/param
    fsdp8 = predict(cfg, 8, 2048, mode="fsdp2", world_size=8, compiled=True)
    assert fsdp8.params + fsdp8.grads + fsdp8.optimizer == pytest.approx(16 * n / 8)
    # sharding over 8 ranks shrinks state, not activations
    assert fsdp8.activations == predict(cfg, 8, 2048, mode="fsdp2", world_size=1, compiled=True).activations


def test_checkpointing_and_resharding_trade_memory():
    cfg = get_config("llama_1b")
    base = predict(cfg, 8, 2048, mode="fsdp2", compiled=True)
    ac = predict(cfg, 8, 2048, mode="fsdp2", compiled=True, ac=True)
    keep = predict(cfg, 8, 2048, mode="fsdp2", compiled=True, reshard_after_forward=False)
    assert ac.activations < base.activations / 5 and ac.peak < base.peak
    assert keep.gathered > base.gathered and keep.peak > base.peak
    # compiled graphs keep less than eager; eager autocast keeps the most
    eager = predict(cfg, 8, 2048, mode="fsdp2", compiled=False)
    assert eager.activations > base.activations
    assert predict(cfg, 8, 2048, mode="ddp").peak > eager.peak


def test_8b_needs_sharding():
    cfg = get_config("llama_8b")  # 16 bytes/param of state is ~128 GB before any activation
    one = predict(cfg, 2, 8192, mode="fsdp2", world_size=1, compiled=True)
    eight = predict(cfg, 2, 8192, mode="fsdp2", world_size=8, compiled=True)
    h200 = 141e9
    assert one.peak > h200 > eight.peak
    assert eight.params + eight.grads + eight.optimizer == pytest.approx((one.params + one.grads + one.optimizer) / 8)
