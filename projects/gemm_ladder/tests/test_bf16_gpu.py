"""Every BF16 rung against an fp32 reference at timed-like sizes and ragged shapes, plus refusals (GPU)."""
from __future__ import annotations

import pytest
from gpufolio.api import Unsupported
from gpufolio_projects.gemm_ladder import ladder
from gpufolio_projects.gemm_ladder.bf16 import bench, ops, registry

pytestmark = pytest.mark.gpu

# Timed-like sizes (8192^3 is covered by the bench's own correctness gate), a 16-row decode shape, and ragged
# shapes: M odd and below one tile, N and K multiples of 8 but not of the tile (K tail < 64, N tail < 128/256),
# a single row, K = 8 (one partial K tile), and one with many tiles per CTA for the persistent rungs.
SHAPES = [(512, 512, 512), (2048, 2048, 2048), (16, 4096, 4096), (1, 8, 8), (127, 264, 72), (333, 520, 1000),
          (1000, 1000, 8), (4099, 4104, 776), (129, 3000, 4096)]


@pytest.fixture(scope="module")
def cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the BF16 extension is built for sm_90a (H100/H200)")
    ops.load()
    return torch


def _inputs(torch, M, N, K, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    return A, B, C


def _assert_close(torch, C, A, B):
    ref = bench._reference({"A": A, "B": B})
    tol = ladder.tolerance_for_k(A.shape[1], "bfloat16")
    assert not C.isnan().any(), f"{C.isnan().sum().item()} outputs never written"
    err = (C.float() - ref).abs()
    ratio = err / (tol.atol + tol.rtol * ref.abs())
    worst = ratio.max().item()
    where = divmod(int(ratio.argmax().item()), C.shape[1])
    assert worst <= 1.0, f"max err/bound {worst:.3g} at (row, col) {where}: got {C[where].item()}, ref {ref[where].item()}"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_rung_matches_fp32_reference(cuda, rung, shape):
    A, B, C = _inputs(cuda, *shape)
    out = ops.gemm(rung.name, A, B, out=C)
    cuda.cuda.synchronize()
    assert out.data_ptr() == C.data_ptr()
    _assert_close(cuda, C, A, B)


@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_rung_is_right_on_repeated_calls_and_fresh_inputs(cuda, rung):
    """Barrier phases and static launch state must not leak from one call into the next."""
    for seed in range(3):
        A, B, C = _inputs(cuda, 1536, 2048, 1088, seed)
        ops.gemm(rung.name, A, B, out=C)
        _assert_close(cuda, C, A, B)


# Rung 15 splits units along K only where they do not fill whole rounds of the resident clusters (66 on an
# H200): 256 units of 64 k-iterations (4096^3), the ragged shape (289 units of 13, an odd number of tile rows, a
# K tail), num_k = 1 (no unit cut), num_k = 3 with an 8-wide K tail in the contributed piece, 1024 units of 16.
STREAM_K = "15_stream_k"
STREAM_K_SHAPES = [(4096, 4096, 4096), (4099, 4104, 776), (4096, 8192, 64), (4096, 8192, 136), (8192, 8192, 1024)]


@pytest.mark.parametrize("shape", STREAM_K_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_stream_k_is_right_on_repeated_calls(cuda, shape):
    """Owners clear the flags they wait on: later calls with fresh inputs must not add a stale partial tile."""
    for seed in range(3):
        A, B, C = _inputs(cuda, *shape, seed)
        ops.gemm(STREAM_K, A, B, out=C)
        _assert_close(cuda, C, A, B)


def test_stream_k_replays_in_a_cuda_graph(cuda):
    """No host work between launches: a captured launch replayed on fresh inputs stays right."""
    shape = (4099, 4104, 776)
    A, B, C = _inputs(cuda, *shape)
    ext, rung = ops.load(), registry.by_name(STREAM_K)
    ladder.launch(ext, rung, A, B, C)  # the first call allocates the workspace: outside the capture
    cuda.cuda.synchronize()
    graph = cuda.cuda.CUDAGraph()
    with cuda.cuda.graph(graph):
        ladder.launch(ext, rung, A, B, C)
    for seed in range(1, 4):
        A_new, B_new, _ = _inputs(cuda, *shape, seed)
        A.copy_(A_new)
        B.copy_(B_new)
        C.fill_(float("nan"))
        graph.replay()
        cuda.cuda.synchronize()
        _assert_close(cuda, C, A, B)


def test_cublas_baseline_passes_the_same_tolerance(cuda):
    for shape in ((8192, 8192, 8192), (16, 4096, 4096)):
        A, B, C = _inputs(cuda, *shape)
        cuda.matmul(A, B.t(), out=C)
        _assert_close(cuda, C, A, B)


@pytest.mark.parametrize("shape", [(64, 64, 100), (64, 60, 64)])
def test_unsupported_shapes_are_refused_before_launch(cuda, shape):
    M, N, K = shape
    A = cuda.randn(M, K, device="cuda").to(cuda.bfloat16)
    B = cuda.randn(N, K, device="cuda").to(cuda.bfloat16)
    with pytest.raises(Unsupported):
        ops.gemm("05_warp_specialized", A, B)


def test_strided_or_misaligned_views_are_refused(cuda):
    A = cuda.randn(65, 64, device="cuda").to(cuda.bfloat16)[1:]  # data_ptr offset by 128 B: aligned
    B = cuda.randn(64, 72, device="cuda").to(cuda.bfloat16)[:, 8:]  # not contiguous
    with pytest.raises(ValueError, match="contiguous"):
        ops.gemm("03_tma_wgmma", A, B)
    B = cuda.randn(64 * 64 + 4, device="cuda").to(cuda.bfloat16)[4:].view(64, 64)  # contiguous, 8 B off
    with pytest.raises(Unsupported, match="16-byte"):
        ops.gemm("03_tma_wgmma", A, B)
