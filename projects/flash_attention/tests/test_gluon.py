"""The Gluon forward (``kernels/gluon_fwd.py``, ``flash_attention(..., backend="gluon")``) and backward
(``kernels/gluon_bwd.py``, ``backend="gluon_bwd"``): on CPU, that they import without a GPU and refuse what
they cannot run with one clear line, that each Gluon backend and bench variant launches its schedule, that the
backward reads LSE rows on 16-byte boundaries, that the models of both barrier protocols
(``lab/gluon_protocol``, ``lab/gluon_bwd_protocol``) hold and catch a wrong arrival count or a missing wait, and
that the compile check's SASS readers count what they say; on a
Hopper GPU with triton 3.6 (``gpu``), that each backend's output and gradients pass FlashAttention's rule on
ragged shapes. The full checks are ``lab/gluon_check`` and ``lab/gluon_bwd_check``."""
import pytest
import torch
from gpufolio_projects.flash_attention import attention, bench
from gpufolio_projects.flash_attention.attention import BACKENDS, GLUON_SCHEDULES, flash_attention
from gpufolio_projects.flash_attention.kernels import gluon_bwd, gluon_fwd
from gpufolio_projects.flash_attention.lab import gluon_protocol, tile_balance
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


def test_the_backward_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match="head dim 96"):
        gluon_bwd.kernel_args(96, causal=False)
    q = torch.randn(1, 2, 64, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="Hopper"):
        gluon_bwd.gluon_attention_bwd(q, q, q, q, q, torch.zeros(1, 2, 64))


def test_the_gluon_backward_reads_lse_rows_that_start_on_16_byte_boundaries():
    # A 1-D TMA box that starts off a 16-byte boundary is an illegal instruction on the GPU (lab/gluon_bwd_probe).
    for seqlen in (333, 336, 777, 4096):
        lse = torch.randn(6 * seqlen)
        rows, stride = gluon_bwd.aligned_rows(lse, 6, seqlen)
        assert stride % 4 == 0 and stride - seqlen < 4
        assert torch.equal(rows.view(6, stride)[:, :seqlen], lse.view(6, seqlen))
        assert not rows.view(6, stride)[:, seqlen:].any()
    lse = torch.randn(2, 3, 336)
    assert gluon_bwd.aligned_rows(lse, 6, 336)[0].data_ptr() == lse.data_ptr()  # a multiple of 4: no copy


def test_only_gluon_bwd_runs_the_gluon_backward(monkeypatch):
    calls = []

    def fake_fwd(q, k, v, **kw):
        return q.detach().clone(), torch.zeros(q.shape[:3])

    def fake_bwd(do, q, k, v, o, lse, causal, scale):
        calls.append(("gluon", tuple(lse.shape), causal, scale))
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)

    def fake_triton_bwd(do, q, k, v, o, lse, causal, scale, atomic_dq=False):
        calls.append(("triton", tuple(lse.shape), causal, scale))
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    monkeypatch.setattr(gluon_fwd, "gluon_attention_fwd", fake_fwd)
    monkeypatch.setattr(gluon_bwd, "gluon_attention_bwd", fake_bwd)
    monkeypatch.setattr(attention, "attn_bwd", fake_triton_bwd)
    for backend in ("gluon_bwd", "gluon_persistent"):
        q = torch.randn(1, 2, 16, 64, requires_grad=True)
        out = attention.FlashAttentionFunction.apply(q, q, q, True, 0.125, False, backend)
        out.sum().backward()
    # gluon_bwd reads the LSE as [B, H, S]; the Triton backward as [B·H, S].
    assert calls == [("gluon", (1, 2, 16), True, 0.125), ("triton", (2, 16), True, 0.125)]


def test_the_gluon_backward_variant_is_forward_plus_backward_only():
    with pytest.raises(bench.Unsupported, match="backward only"):
        bench._attention_fn("gluon_fa_bwd", bench._params(4096, 128, False), torch.device("cuda"), backward=False)


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
        expected = [n for n in bench.GLUON_BACKENDS
                    if b.name == "attention_fwd_bwd" or n not in bench.GLUON_BACKWARD_VARIANTS]
        assert [v.name for v in gluon] == expected
        assert {v.role for v in gluon} == {"candidate"}
    for variant in bench.GLUON_BACKENDS:
        with pytest.raises(bench.Unsupported, match="Hopper"):
            bench._attention_fn(variant, bench.configs("dry")[0], torch.device("cpu"),
                                backward=variant in bench.GLUON_BACKWARD_VARIANTS)


def test_every_gluon_backend_has_a_schedule_and_a_bench_variant():
    gluon = [b for b in BACKENDS if b != "triton"]
    assert sorted(GLUON_SCHEDULES) == sorted(gluon) == sorted(bench.GLUON_BACKENDS.values())
    # The lean synchronisation rides on the overlap, and the softmax under P·V on both.
    assert GLUON_SCHEDULES["gluon_lean"] == dict(overlap=True, lean=True, under_pv=False)
    assert GLUON_SCHEDULES["gluon_under_pv"] == dict(overlap=True, lean=True, under_pv=True)
    assert GLUON_SCHEDULES["gluon_persistent"] == dict(overlap=True, lean=True, under_pv=True, persistent=True)
    assert GLUON_SCHEDULES["gluon_bwd"] == GLUON_SCHEDULES["gluon_persistent"]  # it differs in the backward
    assert set(bench.GLUON_LABELS) == set(bench.GLUON_BACKENDS)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "triton"])
def test_each_gluon_backend_launches_its_schedule(monkeypatch, backend):
    seen = {}

    def fake(q, k, v, **kw):
        seen.update(kw)
        return q, torch.zeros(q.shape[:3])
    monkeypatch.setattr(gluon_fwd, "gluon_attention_fwd", fake)
    q = torch.randn(1, 2, 16, 64)
    attention._forward(q, q, q, causal=True, scale=0.125, backend=backend)
    assert {name: seen[name] for name in GLUON_SCHEDULES[backend]} == GLUON_SCHEDULES[backend]
    assert seen["pingpong"] and seen["causal"] and seen["scale"] == 0.125


def test_lean_and_under_pv_are_kernel_constexprs_off_by_default():
    args = gluon_fwd.kernel_args(128, causal=False, pingpong=True, overlap=True)
    assert args["LEAN"] is False and args["UNDER_PV"] is False
    args = gluon_fwd.kernel_args(64, causal=True, pingpong=True, overlap=True, lean=True, under_pv=True)
    assert args["LEAN"] is True and args["UNDER_PV"] is True


def test_under_pv_needs_the_overlap_and_ping_pong():
    # Its block boundary between the softmax and the wait on P·V is the turn's wait; without the overlap there is
    # no P·V in flight to run under.
    with pytest.raises(ValueError, match="under_pv"):
        gluon_fwd.kernel_args(128, causal=False, pingpong=False, overlap=True, lean=True, under_pv=True)
    with pytest.raises(ValueError, match="under_pv"):
        gluon_fwd.kernel_args(128, causal=False, pingpong=True, overlap=False, lean=True, under_pv=True)


def test_persistent_rides_on_the_softmax_under_pv():
    with pytest.raises(ValueError, match="persistent"):
        gluon_fwd.kernel_args(128, causal=True, pingpong=True, overlap=True, lean=True, persistent=True)
    args = gluon_fwd.kernel_args(64, causal=True, pingpong=True, overlap=True, lean=True, under_pv=True,
                                 persistent=True)
    assert args["PERSISTENT"] is True


def test_the_barrier_protocol_holds_under_random_schedules():
    # Both release styles, n_blocks 1..4 (causal CTAs run fewer blocks than full ones), ring depths 2 and 3.
    assert gluon_protocol.check(schedules=8) == []


def test_the_protocol_model_catches_a_wrong_arrival_count():
    caught = gluon_protocol.check(schedules=8, broken=True, lean_only=True)
    assert any("while block" in f for f in caught) and any("half issued" in f for f in caught)


def test_the_protocol_model_catches_a_q_buffer_refilled_in_use(monkeypatch):
    # A persistent producer that loads the next tile's Q without waiting for its buffer to be released.
    def producer(self):
        for i, n in enumerate(self.tiles):
            yield (lambda: True), (lambda buf=i % 2: self._q_issue(buf))
            yield from self._load_kv(n, sum(self.tiles[:i]))
    monkeypatch.setattr(gluon_protocol.Model, "producer", producer)
    with pytest.raises(gluon_protocol.ProtocolError, match="Q buffer"):
        for seed in range(20):
            gluon_protocol.Model(0, 2, overlap=True, pingpong=True, lean=True, under_pv=True, tiles=(2, 2, 2),
                                 seed=seed).run()


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("overlap,lean,under_pv,persistent", [
    (False, False, False, False), (True, False, False, False), (True, True, False, False), (False, True, False, False),
    (True, True, True, False), (True, True, True, True)])
@pytest.mark.parametrize("causal", [False, True])
def test_ragged_shape_passes_the_flash_rule(causal, overlap, lean, under_pv, persistent):
    # 8·24 heads of 3 query blocks: 576 tiles, so a persistent CTA walks several, of unequal length when causal.
    q, k, v = make_qkv(8, 24, 24, 333, 333, 128, torch.bfloat16, device="cuda")
    out, _ = gluon_fwd.gluon_attention_fwd(q, k, v, causal=causal, overlap=overlap, lean=lean, under_pv=under_pv,
                                           persistent=persistent)
    check_flash_rule(out, q, k, v, causal)


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_short_chain_softmax_at_d64_passes_the_flash_rule(causal, persistent):
    # D = 64 runs the softmax's reductions in short chains (gluon_fwd.SHORT_CHAINS): a ragged S, so the masked
    # last key block and rows past S go through the reshaped max and the per-lane sums too.
    assert gluon_fwd.SHORT_CHAINS[64]
    q, k, v = make_qkv(8, 24, 24, 333, 333, 64, torch.bfloat16, device="cuda")
    out, _ = gluon_fwd.gluon_attention_fwd(q, k, v, causal=causal, overlap=True, lean=True, under_pv=True,
                                           persistent=persistent)
    check_flash_rule(out, q, k, v, causal)


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "triton"])
@pytest.mark.parametrize("S,D,causal", [(333, 128, False), (333, 128, True), (517, 64, True)])
def test_backward_of_each_gluon_backend_passes_the_flash_rule(backend, S, D, causal):
    # The backward (the Triton one, or gluon_bwd's) reads the forward's LSE: a wrong unit or layout there shows
    # up in dq, dk, dv.
    q, k, v = make_qkv(2, 3, 3, S, S, D, torch.bfloat16, device="cuda", grad=True)
    do = torch.randn_like(q)
    out = flash_attention(q, k, v, causal=causal, backend=backend)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
    check_flash_rule((out, dq, dk, dv), q, k, v, causal, do=do)


@pytest.mark.gpu
@needs_hopper
def test_the_causal_backward_in_head_groups_covers_every_key_block_once():
    # At S = 8192, D = 128 a causal group holds two heads, so three heads make a full group and a smaller last
    # one; a key block run twice or never shows up in dk and dv.
    q, k, v = make_qkv(1, 3, 3, 8192, 8192, 128, torch.bfloat16, device="cuda", grad=True)
    assert tile_balance.bwd_group(8192, 128, 3) == 2
    do = torch.randn_like(q)
    out = flash_attention(q, k, v, causal=True, backend="gluon_bwd")
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
    check_flash_rule((out, dq, dk, dv), q, k, v, True, do=do)


def test_the_backward_protocol_model_holds_and_catches_a_missing_wait():
    from gpufolio_projects.flash_attention.lab import gluon_bwd_protocol as bp

    assert bp.check(schedules=15) == []
    assert len(bp.check(schedules=15, skip="ds_full")) == len(bp.SETTINGS)  # dQ would read half-written dS
    # Without the producer's wait, a slot is refilled under its readers wherever the ring wraps.
    assert len(bp.check(schedules=15, skip="qdo_empty")) == sum(n > st for n, st, _ in bp.SETTINGS)
    # The dQ writer warp's variants: two dQ tile pairs, released with dS, a dq_full barrier per tile (four); each
    # setting also played with the writer lagging as far as the protocol lets it.
    assert bp.check(schedules=15, writer=True) == []
    assert len(bp.check(schedules=15, skip="ds_full", writer=True)) == len(bp.SETTINGS)
    # A lagging writer reaches the tile overwrite that ds_empty prevents, from three query blocks on.
    assert len(bp.check(schedules=2, skip="ds_empty", writer=True)) == sum(n >= 3 for n, _, _ in bp.SETTINGS)
    # The form first timed, one dq_full barrier per consumer, deadlocks once a consumer is two blocks ahead.
    caught = bp.check(schedules=2, writer=True, writer_barriers=2)
    assert len(caught) == sum(n >= 2 for n, _, _ in bp.SETTINGS) and all("deadlock" in f for f in caught)


def test_the_compile_check_reads_softmax_placement_and_chains_from_sass():
    from gpufolio_projects.flash_attention.lab import gluon_compile as gc

    # A key block as (opcode, operands): wait on S, two exponentials, the turn's try-wait, one more exponential and
    # a row-sum FADD after it, then the wait on P·V.
    body = [("WARPGROUP.DEPBAR.LE", " gsb0, 0x1"), ("FMNMX", " R1, R2, R3"), ("FMNMX", " R4, R1, R5"),
            ("FMNMX", " R6, R4, R7"), ("MUFU.EX2", " R8, R9"), ("MUFU.EX2", " R10, R11"),
            ("SYNCS.PHASECHK.TRANS64.TRYWAIT", " P0, [UR4], R12"), ("MUFU.EX2", " R13, R14"),
            ("FADD", " R15, R8, R10"), ("WARPGROUP.DEPBAR.LE", " gsb0, 0x0"), ("FMUL", " R16, R16, R17")]
    assert gc._after_turn(body, "MUFU.EX2") == 1 and gc._after_turn(body, "FADD") == 1
    assert gc.exp_between_waits(body) == 3
    assert gc._longest_chain(body, "FMNMX") == 3


def test_the_backward_compile_check_counts_dq_stores_under_a_wgmma():
    from gpufolio_projects.flash_attention.lab import gluon_compile as gc

    sts = ("STS.128", " [R2], R4")
    # The committed order: every wgmma waited out, then the store.
    waited = [("HGMMA.64x64x16.F32.BF16", " R8, gdesc[UR4], RZ"), ("WARPGROUP.DEPBAR.LE", " gsb0, 0x0"), sts, sts]
    assert gc.stores_under_wgmma(waited) == 0
    # dK still in flight (one group left): the store runs under it.
    one_left = waited[:1] * 2 + [("WARPGROUP.DEPBAR.LE", " gsb0, 0x1"), sts, sts, ("WARPGROUP.DEPBAR.LE", " gsb0, 0x0")]
    assert gc.stores_under_wgmma(one_left) == 2
    # The next block's Sᵀ issued first; and a loop whose last instruction leaves a wgmma in flight counts the
    # stores at its top, before any HGMMA of the body.
    assert gc.stores_under_wgmma([waited[0], sts, ("WARPGROUP.DEPBAR.LE", " gsb0, 0x0")]) == 1
    assert gc.stores_under_wgmma([sts, ("WARPGROUP.DEPBAR.LE", " gsb0, 0x0"), waited[0]]) == 1


def test_a_lab_variant_is_the_kernel_with_its_edits_beside_it():
    from gpufolio_projects.flash_attention.lab import variants
    from gpufolio_projects.flash_attention.lab.kernel_variant import edited_source, with_edits

    for load, table in ((variants.forward, variants.FWD_VARIANTS), (variants.backward, variants.BWD_VARIANTS)):
        committed = load(None)
        assert committed.__name__.endswith(("kernels.gluon_fwd", "kernels.gluon_bwd"))
        for name in table:  # every variant's edits still apply to the kernel, and it imports
            variant = load(name)
            assert variant is not committed and variant.__package__ == committed.__package__
            kernel, entry = (("_attn_fwd_ws_kernel", "gluon_attention_fwd") if load is variants.forward
                             else ("_attn_bwd_ws_kernel", "gluon_attention_bwd"))
            # Its own source, so its own compile cache key, and its own launcher; the committed module is untouched.
            assert getattr(variant, kernel).cache_key != getattr(committed, kernel).cache_key
            assert getattr(variant, entry).__globals__[kernel] is getattr(variant, kernel)
    fwd = variants.forward("short max, shuffled sum")
    assert "_row_total(l_i, s_rows)" not in fwd._consumer_tile.src
    assert "_row_total(l_i, s_rows)" in gluon_fwd._consumer_tile.src
    assert fwd.SHORT_CHAINS is not gluon_fwd.SHORT_CHAINS  # a probe overrides the tables of what it times
    with pytest.raises(ValueError, match="no variant 'no such variant'"):
        variants.forward("no such variant")
    with pytest.raises(ValueError, match="edit 1: .* occurs 0 times"):
        edited_source("a = 1\n", "stale", [("b = 2\n", "b = 3\n")])
    with pytest.raises(ValueError, match="occurs 2 times"):
        edited_source("a = 1\na = 1\n", "ambiguous", [("a = 1\n", "a = 2\n")])
    with pytest.raises(SyntaxError):
        with_edits(gluon_fwd, "broken", [("GLUON_TRITON = ", "GLUON_TRITON = = ")])
