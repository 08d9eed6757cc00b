import pytest  # noqa: E402


def tiny_hf_config(**overrides):
    from transformers import LlamaConfig

    kw = dict(vocab_size=97, hidden_size=64, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
              rope_theta=10000.0, eos_token_id=None, bos_token_id=None)
    kw.update(overrides)
    return LlamaConfig(**kw)


@pytest.fixture(scope="session")
def hf_checkpoint(tmp_path_factory):
    """A tiny random fp32 Llama saved by transformers itself; returns (path, the HF model)."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    cfg = tiny_hf_config(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
    model = LlamaForCausalLM(cfg).eval()
    path = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(path)
    return str(path), model


def hf_greedy(model, prompt, n):
    """Greedy continuation by Hugging Face generate (the oracle)."""
    import torch

    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                             pad_token_id=0, eos_token_id=None)
    return out[0, len(prompt):].tolist()


@pytest.fixture(scope="session")
def reference(hf_checkpoint):
    """HF greedy continuations of the tiny checkpoint, memoised by prompt."""
    _, hf = hf_checkpoint
    memo = {}

    def ref(prompt, n=12):
        key = (tuple(prompt), n)
        if key not in memo:
            memo[key] = hf_greedy(hf, prompt, n)
        return memo[key]
    return ref
