"""Unsupported inputs raise TypeError/ValueError with a message that says what to do, before any launch."""
import pytest
import torch
from gpufolio_projects.flash_attention.attention import flash_attention
from gpufolio_projects.flash_attention.kernels.tuning import interpreting

# CPU tensors are valid input only under the interpreter (on a GPU box these run in test_gpu.py instead).
pytestmark = pytest.mark.skipif(not interpreting(), reason="CPU tests: kernels run under TRITON_INTERPRET=1")


def qkv(shape=(1, 2, 16, 32), kv_shape=None, dtype=torch.float32):
    kv_shape = kv_shape or shape
    return torch.randn(shape).to(dtype), torch.randn(kv_shape).to(dtype), torch.randn(kv_shape).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.int8])
def test_bad_dtype(dtype):
    with pytest.raises(TypeError, match="dtype"):
        flash_attention(*qkv(dtype=dtype))


def test_mixed_dtypes():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="share a dtype"):
        flash_attention(q, k.half(), v)


@pytest.mark.parametrize("d", [8, 48, 96, 512])
def test_bad_head_dim(d):
    with pytest.raises(ValueError, match="head_dim"):
        flash_attention(*qkv(shape=(1, 2, 16, d)))


def test_heads_must_divide():
    with pytest.raises(ValueError, match="KV heads must divide"):
        flash_attention(*qkv(shape=(1, 4, 16, 32), kv_shape=(1, 3, 16, 32)))


@pytest.mark.parametrize("kv_shape,match", [((2, 2, 16, 32), "batch"), ((1, 2, 16, 64), "head dims")])
def test_shape_mismatch(kv_shape, match):
    with pytest.raises(ValueError, match=match):
        flash_attention(*qkv(kv_shape=kv_shape))


def test_not_4d():
    with pytest.raises(ValueError, match="4-D"):
        flash_attention(torch.randn(2, 16, 32), torch.randn(2, 16, 32), torch.randn(2, 16, 32))


def test_not_a_tensor():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="torch.Tensor"):
        flash_attention(q.numpy(), k, v)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("inf")])
def test_bad_scale(scale):
    with pytest.raises(ValueError, match="scale"):
        flash_attention(*qkv(), scale=scale)


def test_cpu_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="CUDA"):
        flash_attention(*qkv())


def test_meta_device():
    q, k, v = (t.to("meta") for t in qkv())
    with pytest.raises(ValueError, match="device"):
        flash_attention(q, k, v)


# What the tests above leave out: (q, k, v shapes or tensors, keywords, error, what the message says).
def _meta(t):
    return t.to("meta")


REFUSED = [
    ("k, v shapes differ", lambda q, k, v: (q, k, v[:, :, :8]), {}, ValueError, "k and v must have one shape"),
    ("k not 4-D", lambda q, k, v: (q, k[0], v), {}, ValueError, "k must be 4-D"),
    ("v not a tensor", lambda q, k, v: (q, k, v.tolist()), {}, TypeError, "v must be a torch.Tensor"),
    ("k on another device", lambda q, k, v: (q, _meta(k), v), {}, ValueError, "one device"),
    ("empty batch", lambda q, k, v: (q[:0], k[:0], v[:0]), {}, ValueError, "empty input"),
    ("no query heads", lambda q, k, v: (q[:, :0], k, v), {}, ValueError, "empty input"),
    ("no KV heads", lambda q, k, v: (q, k[:, :0], v[:, :0]), {}, ValueError, "KV heads must divide"),
    ("no queries", lambda q, k, v: (q[:, :, :0], k, v), {}, ValueError, "empty input"),
    ("no keys", lambda q, k, v: (q, k[:, :, :0], v[:, :, :0]), {}, ValueError, "empty input"),
    ("NaN scale", lambda q, k, v: (q, k, v), {"scale": float("nan")}, ValueError, "scale"),
    ("scale not a number", lambda q, k, v: (q, k, v), {"scale": "big"}, ValueError, "could not convert"),
]


@pytest.mark.parametrize(("make", "kw", "error", "says"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_before_launch(make, kw, error, says):
    with pytest.raises(error, match=says):
        flash_attention(*make(*qkv()), **kw)


def test_strided_views_are_accepted_and_match_their_copies():
    """[B, S, H, D] activations viewed as [B, H, S, D] (a transpose, not contiguous) are copied, not refused."""
    q, k, v = (t.transpose(1, 2) for t in qkv(shape=(1, 16, 2, 32)))
    assert not q.is_contiguous()
    torch.testing.assert_close(flash_attention(q, k, v, causal=True),
                               flash_attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True),
                               rtol=0, atol=0)
