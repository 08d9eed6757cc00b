"""Sampling parameters validate; the on-device sampler obeys greedy, top-k and top-p."""
import pytest
import torch
from gpufolio_projects.inference_engine.config import CacheConfig, EngineConfig, ModelConfig, SchedulerConfig
from gpufolio_projects.inference_engine.sampler import Sampler
from gpufolio_projects.inference_engine.sampling_params import SamplingParams


@pytest.mark.parametrize("kw", [dict(temperature=-0.1), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5),
                                dict(max_tokens=0)])
def test_sampling_params_reject_bad_values(kw):
    with pytest.raises(ValueError):
        SamplingParams(**kw)


def test_configs_reject_bad_values():
    with pytest.raises(ValueError):
        CacheConfig(block_size=12)
    with pytest.raises(ValueError):
        CacheConfig(gpu_memory_utilization=1.5)
    with pytest.raises(ValueError):
        SchedulerConfig(num_decode_steps=0)
    with pytest.raises(ValueError):
        ModelConfig(num_attention_heads=6, num_key_value_heads=4)
    with pytest.raises(ValueError):
        EngineConfig(model_config=ModelConfig(), kernels="cuda")
    with pytest.raises(ValueError):
        EngineConfig()


def _call(logits, temps, top_k=None, top_p=None):
    B, V = logits.shape
    tk = torch.tensor(top_k if top_k is not None else [V] * B)
    tp = torch.tensor(top_p if top_p is not None else [1.0] * B, dtype=torch.float32)
    return Sampler()(logits, torch.tensor(temps, dtype=torch.float32), tk, tp, greedy_only=False)


def test_greedy_rows_take_the_argmax_even_in_a_sampled_batch():
    torch.manual_seed(0)
    logits = torch.randn(4, 50)
    out = _call(logits, [0.0, 1.0, 0.0, 1.0])
    assert out[0] == logits[0].argmax() and out[2] == logits[2].argmax()


def test_top_k_restricts_to_the_k_largest():
    torch.manual_seed(1)
    logits = torch.randn(1, 40).repeat(300, 1)
    out = _call(logits, [5.0] * 300, top_k=[3] * 300)
    assert set(out.tolist()) <= set(logits[0].topk(3).indices.tolist())
    assert len(set(out.tolist())) == 3  # at a high temperature all three show up in 300 draws


def test_top_p_keeps_the_smallest_set_reaching_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])).repeat(400, 1)
    out = _call(logits, [1.0] * 400, top_p=[0.7] * 400)  # keeps 0.5 and 0.3 (mass before 0.15 is 0.8 >= 0.7)
    assert set(out.tolist()) == {0, 1}


def test_sampling_follows_the_distribution():
    torch.manual_seed(2)
    probs = torch.tensor([0.6, 0.3, 0.1])
    out = _call(torch.log(probs)[None].repeat(4000, 1), [1.0] * 4000)
    freq = torch.bincount(out, minlength=3).float() / 4000
    assert torch.allclose(freq, probs, atol=0.04)


def test_seeded_noise_is_a_pure_function_of_seed_position_and_token():
    from gpufolio_projects.inference_engine.sampler import counter_exponential

    seeds, pos = torch.tensor([7, 7, 8, 2**62 + 5]), torch.tensor([3, 4, 3, 3])
    e = counter_exponential(seeds, pos, 50)
    assert torch.equal(e[:2], counter_exponential(seeds[:2], pos[:2], 50))  # a row ignores its batch
    assert torch.equal(e[2], counter_exponential(seeds[2:3], pos[2:3], 50)[0])
    assert not torch.equal(e[0], e[1]) and not torch.equal(e[0], e[2]) and not torch.equal(e[2], e[3])
    big = counter_exponential(torch.arange(2000), torch.zeros(2000, dtype=torch.int64), 64)
    assert big.min() > 0 and abs(big.mean().item() - 1.0) < 0.01 and abs(big.var().item() - 1.0) < 0.03  # Exp(1)


def test_seeded_sampling_follows_the_distribution():
    probs = torch.tensor([0.6, 0.3, 0.1])
    n = 4000
    logits = torch.log(probs)[None].repeat(n, 1)
    out = Sampler()(logits, torch.ones(n), torch.full((n,), 3), torch.ones(n), greedy_only=False,
                    seeds=torch.arange(n), positions=torch.full((n,), 17))
    freq = torch.bincount(out, minlength=3).float() / n
    assert torch.allclose(freq, probs, atol=0.04)
