import pytest
import torch
import torch.nn.functional as F
from gpufolio.check import tolerance_for
from gpufolio_projects.fused_kernels.modules import LinearCrossEntropyLoss
from gpufolio_projects.fused_kernels.ops import linear_cross_entropy as lce
from gpufolio_projects.fused_kernels.tests._ref import leaves


def _close(out, ref, dtype, name):
    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all(), f"{name}: non-finite values"
    # Normwise: max|out - ref| <= rtol * max|ref| (the gradients are ~1/(T*V) small: a fixed atol means nothing).
    err, scale, rtol = (out - ref).abs().max().item(), ref.abs().max().item(), tolerance_for(dtype).rtol
    assert err <= rtol * max(scale, 1e-30), f"{name}: max err {err:.3g} > {rtol} * {scale:.3g}"


def _check(T, d, V, dtype, *, device="cpu", smoothing=0.0, w_scale=0.3, ignore=(), chunk=None, grad_scale=1.0,
           **schedule):
    gen = torch.Generator(device=device).manual_seed(T * 7 + V)
    x = torch.randn(T, d, generator=gen, device=device).to(dtype).requires_grad_()
    w = (torch.randn(V, d, generator=gen, device=device) * w_scale).to(dtype).requires_grad_()
    y = torch.randint(0, V, (T,), generator=gen, device=device)
    y[list(ignore)] = -100
    loss = lce.linear_cross_entropy(x, w, y, label_smoothing=smoothing, chunk=chunk, **schedule)
    gx, gw = torch.autograd.grad(loss * grad_scale, (x, w))
    x64, w64 = leaves(x, w)
    ref = F.cross_entropy(x64 @ w64.t(), y, ignore_index=-100, label_smoothing=smoothing)
    rx, rw = torch.autograd.grad(ref * grad_scale, (x64, w64))
    assert loss.dtype == torch.float32
    _close(loss, ref, dtype, "loss")
    _close(gx, rx, dtype, "grad_x")
    _close(gw, rw, dtype, "grad_w")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("V", [1000, 4097])
def test_matches_torch(dtype, V):
    _check(9, 64, V, dtype, ignore=(2,))


@pytest.mark.parametrize("smoothing", [0.1, 0.3])
def test_label_smoothing(smoothing):
    _check(7, 32, 1000, torch.float32, smoothing=smoothing, ignore=(0, 6))


def test_extreme_logits():
    """Logits of size ~1e3: exp overflows fp32 without the running max; the loss is ~1e3, far from log V."""
    _check(6, 32, 1000, torch.float32, w_scale=200.0)


@pytest.mark.parametrize("skip_ignored", [False, True])
def test_many_chunks_and_a_ragged_last_chunk(skip_ignored):
    _check(37, 32, 1000, torch.float32, chunk=16, ignore=(16, 17, 36), skip_ignored=skip_ignored)


def test_skip_ignored_with_smoothing_and_all_rows_ignored():
    _check(20, 16, 300, torch.float32, chunk=8, smoothing=0.1, ignore=range(0, 20, 3), skip_ignored=True)
    x, w = torch.randn(4, 16, requires_grad=True), torch.randn(50, 16, requires_grad=True)
    loss = lce.linear_cross_entropy(x, w, torch.full((4,), -100), skip_ignored=True)
    gx, gw = torch.autograd.grad(loss, (x, w))
    assert loss.item() == 0.0 and not gx.any() and not gw.any()


def test_schedule_thresholds():
    """The measured rule: two streams from 512 rows, skipped padding from 1024; explicit choices win."""
    auto = lce.ChunkPlan.auto
    plan = auto(8192, 128256, 4096, 2)  # the default budget: d/2 = 2048 rows, both on, rows unchanged
    assert (plan.rows, plan.overlap, plan.skip_ignored) == (2048, True, True)
    plan = auto(8192, 128256, 4096, 2, max_chunk_bytes=8192 * 4096 * 2)  # Liger's budget: 256 rows, neither
    assert (plan.rows, plan.overlap, plan.skip_ignored) == (256, False, False)
    assert (auto(8192, 128256, 4096, 2, chunk=512).overlap, auto(8192, 128256, 4096, 2, chunk=512).skip_ignored) == (
        True, False)
    assert auto(8192, 128256, 4096, 2, chunk=2048, overlap=False, skip_ignored=False) == lce.ChunkPlan(2048)


def test_head_rule():
    """The head when the chunks are small (<= HEAD_MAX_ROWS) and would not already take every token at once."""
    auto = lce.ChunkPlan.auto
    liger_budget = 8192 * 4096 * 2
    assert auto(8192, 128256, 4096, 2, max_chunk_bytes=liger_budget).head  # 256-row chunks
    assert auto(4096, 128256, 4096, 2, max_chunk_bytes=4096 * 4096 * 2).head  # 128-row chunks
    assert not auto(8192, 128256, 4096, 2).head  # the default budget's 2048-row chunks
    assert not auto(8192, 128256, 4096, 2, chunk=512).head  # a tie at 512 rows: the simpler schedule
    assert not auto(100, 1000, 64, 4, chunk=128).head  # one chunk holds every token
    assert not auto(8192, 128256, 4096, 2, max_chunk_bytes=liger_budget, head=False).head


def test_chunk_rule_counts_the_gather_buffers():
    # skipping ignored tokens adds two [rows, d] buffers per chunk: fewer rows fit the same budget
    budget = 8192 * 4096 * 2
    assert lce.chunk_rows(8192, 128256, 4096, 2, budget, skip_ignored=True) == 240


def test_grad_of_scaled_loss():
    _check(5, 32, 777, torch.float32, grad_scale=3.0)


def test_ignored_rows_get_zero_gradient():
    x = torch.randn(4, 16, requires_grad=True)
    w = torch.randn(100, 16, requires_grad=True)
    y = torch.tensor([-100, 5, -100, 7])
    gx, = torch.autograd.grad(lce.linear_cross_entropy(x, w, y), (x,))
    assert torch.equal(gx[0], torch.zeros(16)) and torch.equal(gx[2], torch.zeros(16))


def test_module():
    x, w, y = torch.randn(2, 3, 16), torch.randn(50, 16), torch.randint(0, 50, (2, 3))
    loss = LinearCrossEntropyLoss(label_smoothing=0.1)(x, w, y)
    torch.testing.assert_close(loss, F.cross_entropy(x.reshape(6, 16) @ w.t(), y.reshape(6), label_smoothing=0.1))


def test_chunk_rule():
    # Llama-3 head, bf16: half of grad_W buys C = d/2 = 2048 rows (a 0.49 GiB buffer beside 0.98 GiB of grad_W)
    assert lce.chunk_rows(8192, 128256, 4096, 2) == 2048
    assert lce.chunk_rows(8192, 32000, 3000, 2) == 1024  # largest power of two <= 1500
    # Liger's budget (a chunk no bigger than x): 8192 * 4096 / 128256 = 261 -> 256 rows
    assert lce.chunk_rows(8192, 128256, 4096, 2, max_chunk_bytes=8192 * 4096 * 2) == 256
    assert lce.chunk_rows(100, 1000, 64, 4) == 32  # d = 64: 32 rows
    assert lce.chunk_rows(100, 1000, 4096, 4) == 100  # never more than the tokens
    assert lce.chunk_rows(8192, 128256, 4096, 2, max_chunk_bytes=1) == 16  # floor: one GEMM tile of rows


@pytest.mark.gpu
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("overlap,skip_ignored", [(False, False), (True, False), (True, True)])
def test_gpu_bf16_llama_head(smoothing, overlap, skip_ignored):
    """Llama-3's head in bf16 with 256-row chunks (8 of them), each schedule: two streams, skipped padding."""
    _check(2048, 4096, 128256, torch.bfloat16, device="cuda", smoothing=smoothing, w_scale=0.02,
           ignore=range(0, 2048, 17), chunk=256, overlap=overlap, skip_ignored=skip_ignored)


# ---- the head: the first min(T, d) tokens computed in grad_W's own storage ---------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("T,d", [(64, 64), (23, 64), (100, 32)])  # T = d, T < d (direct writes), T > d (+ chunks)
def test_head_matches_torch(dtype, T, d, monkeypatch):
    # Small vocab chunks: many products, so both ways a chunk lands (straight into grad_W, or via the buffer)
    monkeypatch.setattr(lce, "VOCAB_CHUNK", 48)
    _check(T, d, 1000, dtype, ignore=(1, T - 1), head=True, chunk=16)


@pytest.mark.parametrize("skip_ignored", [False, True])
def test_head_then_chunks_with_smoothing(skip_ignored):
    _check(77, 16, 555, torch.float32, smoothing=0.1, ignore=(0, 3, 40, 76), head=True, chunk=16,
           skip_ignored=skip_ignored)


def test_head_extreme_logits_and_all_ignored():
    _check(8, 32, 1000, torch.float32, w_scale=200.0, head=True)
    x, w = torch.randn(4, 16, requires_grad=True), torch.randn(50, 16, requires_grad=True)
    loss = lce.linear_cross_entropy(x, w, torch.full((4,), -100), head=True)
    gx, gw = torch.autograd.grad(loss, (x, w))
    assert loss.item() == 0.0 and not gx.any() and not gw.any()


@pytest.mark.parametrize("vocab_chunk", [7, 64, 5000])
def test_head_every_vocab_chunking_lands_the_same(vocab_chunk):
    """The products run from the top chunk down and may overwrite rows of the gradient they read; any chunk size
    (ragged, one, many) must give the same grad_W as one product from a separate buffer."""
    from gpufolio_projects.fused_kernels.ops.linear_cross_entropy_head import head_in_grad_w

    gen = torch.Generator().manual_seed(5)
    T, d, V = 40, 48, 301
    x, w = torch.randn(T, d, generator=gen), torch.randn(V, d, generator=gen)
    y = torch.randint(0, V, (T,), generator=gen)
    n_valid = torch.tensor(T)
    gw, gx, loss = torch.empty(V, d), torch.empty(T, d), torch.empty(T)
    head_in_grad_w(x, w, y, n_valid, gw, gx, loss, ignore_index=-100, smoothing=0.0, vocab_chunk=vocab_chunk)
    g = (torch.softmax(x @ w.t(), dim=1) - F.one_hot(y, V)) / T
    torch.testing.assert_close(gw, g.t() @ x, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(gx, g @ w, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(loss.sum(), F.cross_entropy(x @ w.t(), y), rtol=1e-5, atol=1e-6)


def test_head_refuses_more_tokens_than_d():
    from gpufolio_projects.fused_kernels.ops.linear_cross_entropy_head import head_in_grad_w

    x, w = torch.randn(9, 8), torch.randn(20, 8)
    with pytest.raises(ValueError, match="at most d = 8"):
        head_in_grad_w(x, w, torch.zeros(9, dtype=torch.long), torch.tensor(9), torch.empty(20, 8),
                       torch.empty(9, 8), torch.empty(9), ignore_index=-100, smoothing=0.0)


def test_target_shape_is_checked():
    with pytest.raises(ValueError, match="does not match"):
        lce.linear_cross_entropy_fwd_bwd(torch.randn(4, 8), torch.randn(10, 8), torch.zeros(5, dtype=torch.long))


@pytest.mark.gpu
@pytest.mark.parametrize("T", [4096, 4096 + 512])  # all tokens in the head; the head and then 256-row chunks
def test_gpu_bf16_head_llama(T):
    _check(T, 4096, 128256, torch.bfloat16, device="cuda", w_scale=0.02, ignore=range(0, T, 19), head=True,
           chunk=256)


@pytest.mark.gpu
def test_gpu_head_memory_is_the_gradients_and_one_vocab_chunk():
    """At T = d the head holds no logits buffer: the peak beyond the inputs is grad_W, grad_x and one
    [VOCAB_CHUNK, d] product buffer, plus per-token vectors (a few MiB)."""
    from gpufolio_projects.fused_kernels.ops.linear_cross_entropy_head import VOCAB_CHUNK

    T = d = 4096
    V = 128256
    x = torch.randn(T, d, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(V, d, device="cuda", dtype=torch.bfloat16) * 0.02
    y = torch.randint(0, V, (T,), device="cuda")
    lce.linear_cross_entropy_fwd_bwd(x, w, y, head=True)  # cuBLAS workspace and Triton compiles first
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = lce.linear_cross_entropy_fwd_bwd(x, w, y, head=True)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    floor = (V * d + T * d + VOCAB_CHUNK * d) * 2
    assert floor <= extra <= floor + 8 * 2**20, (extra, floor)
    del out
