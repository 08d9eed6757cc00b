"""Weights: our loader reads a checkpoint transformers wrote, and transformers reads the one we write; the
full-sequence logits agree in fp32 either way."""
import torch
from gpufolio_projects.inference_engine.attention import AttentionMetadata
from gpufolio_projects.inference_engine.config import ModelConfig
from gpufolio_projects.inference_engine.model import LlamaForCausalLM, load_hf_weights, random_init_, save_hf_checkpoint


def _our_logits(model: LlamaForCausalLM, ids: list[int]) -> torch.Tensor:
    """One prefill of ids through our model with a one-sequence paged cache; logits at every position."""
    cfg = model.config
    bs = 4
    nb = -(-len(ids) // bs)
    kv = torch.zeros(2, cfg.num_hidden_layers, nb, bs, cfg.num_key_value_heads, cfg.head_dim)
    caches = [(kv[0, i], kv[1, i]) for i in range(cfg.num_hidden_layers)]
    n = len(ids)
    meta = AttentionMetadata(True, bs, torch.arange(n), torch.arange(nb, dtype=torch.int32)[None],
                             torch.tensor([n], dtype=torch.int32), [n], [n])
    with torch.no_grad():
        return model.compute_logits(model(torch.tensor(ids), torch.arange(n), caches, meta))


def test_load_hf_checkpoint_matches_hf_logits(hf_checkpoint):
    path, hf = hf_checkpoint
    cfg = ModelConfig.from_hf(path)
    assert cfg.rope_scaling["rope_type"] == "llama3" and cfg.tie_word_embeddings
    model = LlamaForCausalLM(cfg, 128)
    load_hf_weights(model, path)
    ids = torch.randint(0, cfg.vocab_size, (37,), generator=torch.Generator().manual_seed(0)).tolist()
    with torch.no_grad():
        ref = hf(torch.tensor([ids])).logits[0]
    torch.testing.assert_close(_our_logits(model, ids), ref, atol=1e-4, rtol=1e-4)


def test_saved_checkpoint_loads_in_transformers(tmp_path):
    from transformers import LlamaForCausalLM as HFLlama

    cfg = ModelConfig(vocab_size=101, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
                      tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg, 128)
    random_init_(model, seed=3, std=0.3)
    save_hf_checkpoint(model, str(tmp_path))
    hf = HFLlama.from_pretrained(str(tmp_path), dtype=torch.float32).eval()
    ids = list(range(3, 60))
    with torch.no_grad():
        ref = hf(torch.tensor([ids])).logits[0]
    torch.testing.assert_close(_our_logits(model, ids), ref, atol=1e-4, rtol=1e-4)
    # and back through our own loader
    again = LlamaForCausalLM(ModelConfig.from_hf(str(tmp_path)), 128)
    load_hf_weights(again, str(tmp_path))
    torch.testing.assert_close(_our_logits(again, ids), ref, atol=1e-4, rtol=1e-4)
