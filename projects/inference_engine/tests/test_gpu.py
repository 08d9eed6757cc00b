"""On the GPU: the Triton kernels in bf16 against the reference paths, CUDA-graph decode against eager decode,
and the whole engine against Hugging Face greedy decoding (fp32, token-identical)."""
import pytest
import torch

pytestmark = pytest.mark.gpu


def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    return torch.device("cuda")


def test_paged_decode_kernel_bf16_matches_reference():
    from gpufolio_projects.inference_engine.attention import paged_decode_reference
    from gpufolio_projects.inference_engine.triton_paged_attention import paged_decode_triton

    dev = _cuda()
    g = torch.Generator(device=dev).manual_seed(0)
    B, H, Hkv, D, bs, nb = 7, 32, 8, 64, 16, 300
    lens = torch.tensor([1, 15, 16, 17, 300, 1000, 0], dtype=torch.int32, device=dev)
    kc = torch.randn(nb + 1, bs, Hkv, D, generator=g, device=dev, dtype=torch.bfloat16)
    vc = torch.randn(nb + 1, bs, Hkv, D, generator=g, device=dev, dtype=torch.bfloat16)
    W = 64
    tables = torch.randint(0, nb, (B, W), generator=g, device=dev, dtype=torch.int32)
    q = torch.randn(B, H, D, generator=g, device=dev, dtype=torch.bfloat16)
    out = paged_decode_triton(q, kc, vc, tables, lens, D ** -0.5)
    ref = paged_decode_reference(q.float(), kc.float(), vc.float(), tables, lens, D ** -0.5)
    lowp = paged_decode_reference(q, kc, vc, tables, lens, D ** -0.5)  # PyTorch's own bf16 result
    err = (out.float() - ref).abs().max().item()
    lowp_err = (lowp.float() - ref).abs().max().item()
    assert err <= 2 * lowp_err + 1e-3, (err, lowp_err)


def test_triton_ops_bf16_match_torch():
    from gpufolio_projects.inference_engine.triton_ops import add_rmsnorm, silu_mul

    dev = _cuda()
    x = torch.randn(33, 2048, device=dev, dtype=torch.bfloat16)
    r = torch.randn(33, 2048, device=dev, dtype=torch.bfloat16)
    w = torch.randn(2048, device=dev, dtype=torch.bfloat16)
    y, s = add_rmsnorm(x, r, w, 1e-5)
    s_ref = x + r
    sf = s_ref.float()
    y_ref = (sf * torch.rsqrt(sf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(torch.bfloat16) * w
    torch.testing.assert_close(s, s_ref, atol=0, rtol=0)
    torch.testing.assert_close(y.float(), y_ref.float(), atol=1.6e-2, rtol=1.6e-2)
    gu = torch.randn(33, 2 * 8192, device=dev, dtype=torch.bfloat16)
    g, u = gu.chunk(2, -1)
    torch.testing.assert_close(silu_mul(gu).float(), (torch.nn.functional.silu(g) * u).float(), atol=1.6e-2, rtol=1.6e-2)


def _tiny_engine(path, cuda_graphs, **kw):
    from gpufolio_projects.inference_engine.config import CacheConfig, SchedulerConfig
    from gpufolio_projects.inference_engine.llm_engine import LLM

    return LLM(path, device="cuda", dtype="float32", max_model_len=256, cuda_graphs=cuda_graphs, max_graph_batch=16,
               cache=CacheConfig(block_size=16, num_blocks=kw.pop("num_blocks", 128)),
               scheduler=SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=kw.pop("budget", 512),
                                         num_decode_steps=kw.pop("steps", 4)))


@pytest.fixture(scope="module")
def gpu_checkpoint(hf_checkpoint):
    _cuda()
    import copy

    path, hf = hf_checkpoint
    return path, copy.deepcopy(hf).to("cuda")


def _prompts(n, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    lens = [1, 5, 16, 17, 40, 63, 90, 120][:n]
    return [torch.randint(0, vocab, (k,), generator=g).tolist() for k in lens]


@pytest.mark.parametrize("n", [1, 7])  # 7 sequences: padded to the bucket of 8 inside the graph
def test_cuda_graph_decode_equals_eager(gpu_checkpoint, n):
    """Graphs with programmatic dependent launch (pdl.py) against eager launches without it: the same tokens."""
    from gpufolio_projects.inference_engine.sampling_params import SamplingParams

    path, _ = gpu_checkpoint
    prompts = _prompts(n, 97)
    sp = SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True)
    graphs = _tiny_engine(path, True).generate(prompts, sp)
    eager_engine = _tiny_engine(path, False)
    eager_engine.model_runner.model.kernels.pdl = False
    eager = eager_engine.generate(prompts, sp)
    assert graphs == eager


def test_seeded_sampling_in_cuda_graphs_equals_eager_and_ignores_the_batch(gpu_checkpoint):
    """The counter-based noise inside the sampled decode graph: a seeded request draws the same tokens with graphs
    as without, alone as in a batch of seven."""
    from gpufolio_projects.inference_engine.sampling_params import SamplingParams

    path, _ = gpu_checkpoint
    prompts = _prompts(7, 97, seed=2)
    sps = [SamplingParams(temperature=1.0, top_p=0.9, max_tokens=24, ignore_eos=True, seed=100 + i)
           for i in range(7)]
    graphs = _tiny_engine(path, True).generate(prompts, sps)
    assert graphs == _tiny_engine(path, False).generate(prompts, sps)
    assert _tiny_engine(path, True).generate(prompts[3:4], sps[3:4])[0] == graphs[3]


def test_gpu_engine_token_identical_to_hf_fp32(gpu_checkpoint):
    from gpufolio_projects.inference_engine.sampling_params import SamplingParams

    path, hf = gpu_checkpoint
    torch.backends.cuda.matmul.allow_tf32 = False
    prompts = _prompts(8, 97, seed=1)
    sp = SamplingParams(temperature=0.0, max_tokens=20, ignore_eos=True)
    # a small pool and budget: chunked prefill and preemption both happen
    eng = _tiny_engine(path, True, num_blocks=24, budget=64)
    outs = eng.generate(prompts + prompts[:3], sp)  # repeats hit the prefix cache
    for p, o in zip(prompts + prompts[:3], outs):
        with torch.no_grad():
            gen = hf.generate(torch.tensor([p], device="cuda"), max_new_tokens=20, min_new_tokens=20,
                              do_sample=False, pad_token_id=0, eos_token_id=None)
        ref = gen[0, len(p):].tolist()
        assert o == ref
    assert eng.block_manager.num_prefix_hit_tokens > 0


@pytest.mark.parametrize("M,cfg", [(1, None),  # the tuned table (gemv_configs.json), one shot for K = 2048
                                   (1, dict(USE_DOT=False, BLOCK_N=8, BLOCK_K=512, num_stages=3)),  # K loop
                                   (1, dict(USE_DOT=True, BLOCK_N=16, BLOCK_K=256, num_stages=4)), (16, None)])
def test_fused_gemv_bf16_matches_fp32_reference(M, cfg):
    """Every mode of the decode GEMV at the 1B model's shapes: error against fp32 at most 2x PyTorch's own bf16
    error (plus a few bf16 ulps for the roundings both paths make at the same places)."""
    from gpufolio_projects.inference_engine.triton_gemv import fused_linear

    dev = _cuda()
    g = torch.Generator(device=dev).manual_seed(M)
    bf = torch.bfloat16

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g, device=dev) * scale).to(bf)

    def rms(h, w):
        hf = h.float()
        return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(bf) * w

    def check(out, ref32, lowp):
        err = (out.float() - ref32).abs().max().item()
        lowp_err = (lowp.float() - ref32).abs().max().item()
        assert err <= 2 * lowp_err + 2e-2 * ref32.abs().max().item(), (err, lowp_err)

    h, nw = rnd(M, 2048), rnd(2048, scale=0.5) + 1
    for N in (3072, 128256):  # qkv; the LM head with fp32 logits out
        w = rnd(N, 2048, scale=2048 ** -0.5)
        xn = rms(h, nw)
        out = fused_linear(h, w, norm_weight=nw, out_dtype=torch.float32 if N > 4096 else None, config=cfg)
        check(out, xn.float() @ w.float().T, xn @ w.T)
    w = rnd(2 * 8192, 2048, scale=2048 ** -0.5)  # gate_up with SiLU·mul
    xn = rms(h, nw)
    a32, b32 = (xn.float() @ w.float().T).chunk(2, -1)
    a, b = (xn @ w.T).chunk(2, -1)
    check(fused_linear(h, w, norm_weight=nw, silu_mul=True, config=cfg), torch.nn.functional.silu(a32) * b32,
          torch.nn.functional.silu(a) * b)
    x, w, res = rnd(M, 8192), rnd(2048, 8192, scale=8192 ** -0.5), rnd(M, 2048)  # down with the residual add
    ref32, lowp = x.float() @ w.float().T + res.float(), x @ w.T + res
    check(fused_linear(x, w, residual=res, config=cfg), ref32, lowp)


def test_fused_decode_matches_unfused_bf16():
    """The fused decode step (six kernels a layer) against forward + compute_logits on the same KV cache."""
    from gpufolio_projects.inference_engine.attention import AttentionMetadata
    from gpufolio_projects.inference_engine.config import CacheConfig, ModelConfig, SchedulerConfig
    from gpufolio_projects.inference_engine.fused_decode import decode_logits
    from gpufolio_projects.inference_engine.llm_engine import LLM
    from gpufolio_projects.inference_engine.sampling_params import SamplingParams

    _cuda()
    cfg = ModelConfig(vocab_size=1000, hidden_size=256, intermediate_size=640, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2)
    eng = LLM(cfg, device="cuda", dtype="bfloat16", cuda_graphs=False, max_model_len=256,
              cache=CacheConfig(num_blocks=64), scheduler=SchedulerConfig(max_num_seqs=4))
    prompts = _prompts(3, 1000, seed=3)
    seqs = [eng.add_request(p, SamplingParams(temperature=0.0, max_tokens=4, ignore_eos=True)) for p in prompts]
    eng.step()  # the prefill: every sequence now decodes
    runner = eng.model_runner
    runner._fill_decode_buffers(seqs, 3)
    ids, pos, ctx, bt = runner.input_ids[:3], runner.positions[:3], runner.context_lens[:3], runner.block_tables[:3]
    with torch.inference_mode():
        fused = decode_logits(runner.model, ids, pos, runner.kv_caches, bt, ctx)
        slot = bt.gather(1, (pos // 16).unsqueeze(1)).squeeze(1).long() * 16 + pos % 16
        meta = AttentionMetadata(False, 16, slot, bt, ctx)
        ref = runner.model.compute_logits(runner.model(ids, pos, runner.kv_caches, meta))
    scale = ref.abs().max().item()
    assert (fused - ref).abs().max().item() <= 3e-2 * scale
    assert (fused.argmax(-1) == ref.argmax(-1)).float().mean().item() >= 2 / 3


def test_varlen_prefill_matches_per_sequence_sdpa_bf16():
    """The one-launch FlashAttention-2 varlen prefill against per-sequence SDPA, with cached prefixes
    (causal aligned bottom-right) and without."""
    from gpufolio_projects.inference_engine.attention import AttentionMetadata, PrefillAttention, _varlen_flash

    dev = _cuda()
    g = torch.Generator(device=dev).manual_seed(7)
    H, Hkv, D, bs, nb = 32, 8, 64, 16, 40
    query_lens, ctx_lens = [5, 7, 1, 40], [5, 20, 9, 40]
    kc = torch.randn(nb, bs, Hkv, D, generator=g, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    tables = torch.randperm(nb, generator=g, device=dev)[:4 * 4].view(4, 4).to(torch.int32)
    T = sum(query_lens)
    q = torch.randn(T, H, D, generator=g, device=dev, dtype=torch.bfloat16)
    k = torch.randn(T, Hkv, D, generator=g, device=dev, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    meta = AttentionMetadata(True, bs, torch.zeros(T, dtype=torch.int64, device=dev), tables,
                             torch.tensor(ctx_lens, dtype=torch.int32, device=dev), query_lens, ctx_lens)
    out = _varlen_flash(q, k, v, kc, vc, meta, D ** -0.5)
    ref = PrefillAttention(allow_gpufolio=False, varlen=False)(q, k, v, kc, vc, meta, D ** -0.5)
    torch.testing.assert_close(out.float(), ref.float(), atol=2e-2, rtol=2e-2)
