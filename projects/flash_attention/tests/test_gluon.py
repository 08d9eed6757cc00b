"""The Gluon forward (``kernels/gluon_fwd.py``, ``flash_attention(..., backend="gluon")``): on CPU, that it
imports without a GPU and refuses what it cannot run with one clear line; on a Hopper GPU with triton 3.6
(``gpu``), that its output and the Triton backward fed its O and LSE pass FlashAttention's rule on ragged
shapes. Its full forward check is ``lab/gluon_check``."""
import pytest
import torch
from gpufolio_projects.flash_attention import bench
from gpufolio_projects.flash_attention.attention import BACKENDS, flash_attention
from gpufolio_projects.flash_attention.kernels import gluon_fwd
from gpufolio_projects.flash_attention.tests.helpers import check_flash_rule, make_qkv


def _runnable() -> bool:
    return (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
            and gluon_fwd.unavailable() is None)


needs_hopper = pytest.mark.skipif(not _runnable(), reason="needs a Hopper GPU (sm_90a) and triton 3.6")


def test_refuses_a_non_hopper_device():
    q = torch.randn(1, 2, 64, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="Hopper"):
        gluon_fwd.gluon_attention_fwd(q, q, q)


def test_refuses_an_unsupported_head_dim():
    with pytest.raises(ValueError, match="head dim 96"):
        gluon_fwd.kernel_args(96, causal=False, pingpong=True)


def test_names_the_triton_release_it_needs(monkeypatch):
    monkeypatch.setattr(gluon_fwd.triton, "__version__", "3.9.0")
    assert "triton 3.6" in gluon_fwd.unavailable() and "3.9.0" in gluon_fwd.unavailable()
    monkeypatch.setattr(gluon_fwd.triton, "__version__", "3.6.0")
    assert gluon_fwd.unavailable() is None


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "triton"])
def test_backend_refuses_what_the_gluon_forward_lacks(backend):
    q, k, v = make_qkv(1, 4, 2, 16, 16, 64, torch.float32)
    with pytest.raises(ValueError, match="GQA/MQA"):
        flash_attention(q, k, v, backend=backend)
    q, k, v = make_qkv(1, 2, 2, 16, 24, 64, torch.float32)
    with pytest.raises(ValueError, match="Sq == Sk"):
        flash_attention(q, k, v, backend=backend)


def test_unknown_backend_is_refused():
    q, k, v = make_qkv(1, 2, 2, 16, 16, 64, torch.float32)
    with pytest.raises(ValueError, match="backend 'cudnn' unknown"):
        flash_attention(q, k, v, backend="cudnn")


def test_bench_runs_the_gluon_variants_as_candidates_and_skips_them_off_hopper():
    for b in bench.BENCHES:
        gluon = [v for v in b.variants if v.name in bench.GLUON_BACKENDS]
        assert [v.role for v in gluon] == ["candidate", "candidate"]
    with pytest.raises(bench.Unsupported, match="Hopper"):
        bench._attention_fn("gluon_fa", bench.configs("dry")[0], torch.device("cpu"), backward=False)


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_ragged_shape_passes_the_flash_rule(causal, overlap):
    q, k, v = make_qkv(2, 3, 3, 333, 333, 128, torch.bfloat16, device="cuda")
    out, _ = gluon_fwd.gluon_attention_fwd(q, k, v, causal=causal, overlap=overlap)
    check_flash_rule(out, q, k, v, causal)


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("backend", ["gluon", "gluon_overlap"])
@pytest.mark.parametrize("S,D,causal", [(333, 128, False), (333, 128, True), (517, 64, True)])
def test_triton_backward_from_the_gluon_forward_passes_the_flash_rule(backend, S, D, causal):
    # The backward reads the forward's LSE: a wrong unit or layout there shows up in dq, dk, dv.
    q, k, v = make_qkv(2, 3, 3, S, S, D, torch.bfloat16, device="cuda", grad=True)
    do = torch.randn_like(q)
    out = flash_attention(q, k, v, causal=causal, backend=backend)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
    check_flash_rule((out, dq, dk, dv), q, k, v, causal, do=do)
