"""The optional switches to the sibling projects' Triton kernels: the same loss and gradients as plain PyTorch
(fp32, Triton under the interpreter on CPU tensors; the root conftest sets TRITON_INTERPRET=1 without CUDA)."""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("CPU tensors through Triton kernels need the interpreter (TRITON_INTERPRET=1)", allow_module_level=True)

from gpufolio_projects.fsdp_mfu.configs import ModelConfig  # noqa: E402
from gpufolio_projects.fsdp_mfu.kernels import build_kernels  # noqa: E402
from gpufolio_projects.fsdp_mfu.model import Transformer  # noqa: E402

# head_dim 64 (a size the Triton attention supports), GQA 2:1, T not a power of two
CFG = ModelConfig("k", dim=128, n_layers=1, n_heads=2, n_kv_heads=1, ffn_dim=96, vocab_size=64, max_seq_len=32)


def _loss_and_grads(kernels):
    torch.manual_seed(0)
    model = Transformer(CFG, kernels)
    model.init_weights(0)
    tokens = torch.randint(0, CFG.vocab_size, (2, 20), generator=torch.Generator().manual_seed(1))
    loss = model(tokens, tokens.roll(-1, dims=1))
    loss.backward()
    return float(loss), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def test_sibling_kernels_match_torch():
    try:
        fused = build_kernels(fused=True, triton_attention=True)
    except ImportError as e:  # a sibling project missing from this checkout: the switch must say why
        pytest.skip(str(e))
    assert fused.label == "fused_kernels+triton_attention"
    ref_loss, ref_grads = _loss_and_grads(build_kernels())
    loss, grads = _loss_and_grads(fused)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for name, g in grads.items():
        torch.testing.assert_close(g, ref_grads[name], rtol=1e-4, atol=1e-6, msg=name)


def test_missing_module_is_an_error_not_a_fallback():
    from gpufolio_projects.fsdp_mfu import kernels

    with pytest.raises(ImportError):
        kernels._find("gpufolio_projects.no_such_project", ("fn",))
