"""Step-level options that must not change the maths: clipping folded into fused AdamW, fused projections."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpufolio_projects.fsdp_mfu.configs import get_config  # noqa: E402
from gpufolio_projects.fsdp_mfu.model import Transformer  # noqa: E402
from gpufolio_projects.fsdp_mfu.trainer import TrainConfig, Trainer  # noqa: E402

CFG = get_config("tiny")


def _losses(steps: int = 4, **kw) -> list[float]:
    seq = torch.randint(0, CFG.vocab_size, (2, 33), generator=torch.Generator().manual_seed(0))
    tr = Trainer(CFG, TrainConfig(dtype="float32", lr=1e-2, **kw), torch.device("cpu"))
    return [float(tr.step(seq[:, :-1], seq[:, 1:])) for _ in range(steps)]


@pytest.mark.parametrize("mode", ["single", "fsdp2"])
def test_folded_clip_equals_explicit_clip(mode):
    """grad_scale = max(1, norm / max_norm) inside fused AdamW is clip_grads_with_norm_'s factor, inverted."""
    explicit = _losses(mode=mode, fused_adamw=True, grad_clip=0.05)
    folded = _losses(mode=mode, fused_adamw=True, grad_clip=0.05, fold_clip=True)
    unclipped = _losses(mode=mode, fused_adamw=True, grad_clip=None)
    assert folded == pytest.approx(explicit, rel=1e-5)
    assert abs(unclipped[-1] - explicit[-1]) > 1e-3  # the clip was active: the test compares something


def test_fold_clip_needs_fused_adamw():
    with pytest.raises(ValueError):
        TrainConfig(fold_clip=True, fused_adamw=False)


def test_fused_projections_compute_the_same_function():
    """wqkv = [wq; wk; wv] and w13 = [w1; w3] give the split model's logits exactly (fp32)."""
    torch.manual_seed(0)
    split, fused = Transformer(CFG), Transformer(CFG, fused_proj=True)
    sd = dict(split.state_dict())
    for i in range(CFG.n_layers):
        a, f = f"layers.{i}.attention.", f"layers.{i}.feed_forward."
        sd[a + "wqkv.weight"] = torch.cat([sd.pop(a + n + ".weight") for n in ("wq", "wk", "wv")])
        sd[f + "w13.weight"] = torch.cat([sd.pop(f + n + ".weight") for n in ("w1", "w3")])
    fused.load_state_dict(sd)
    assert sum(p.numel() for p in fused.parameters()) == CFG.num_params()
    tokens = torch.randint(0, CFG.vocab_size, (2, 16))
    torch.testing.assert_close(fused(tokens), split(tokens), rtol=1e-5, atol=1e-5)
