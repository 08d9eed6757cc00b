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


def test_cuda_graph_decode_equals_eager(gpu_checkpoint):
    from gpufolio_projects.inference_engine.sampling_params import SamplingParams

    path, _ = gpu_checkpoint
    prompts = _prompts(7, 97)  # 7 sequences: padded to the bucket of 8 inside the graph
    sp = SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True)
    graphs = _tiny_engine(path, True).generate(prompts, sp)
    eager = _tiny_engine(path, False).generate(prompts, sp)
    assert graphs == eager


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
