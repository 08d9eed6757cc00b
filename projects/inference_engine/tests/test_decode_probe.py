"""decode_probe's host side on CPU: switching kernel paths restores the engine's choice, and a probe sequence
is prefilled into the decode buffers and released without leaving blocks or running sequences behind (the GPU
side — graphs and events — runs in the bench on the GPU)."""
import pytest
from gpufolio_projects.inference_engine import LLM, SamplingParams
from gpufolio_projects.inference_engine.config import CacheConfig
from gpufolio_projects.inference_engine.decode_probe import KERNEL_PATHS, decode_state, kernel_path, release


def test_probe_state_and_paths_leave_the_engine_as_they_found_it(hf_checkpoint, reference):
    path, _ = hf_checkpoint
    eng = LLM(path, device="cpu", dtype="float32", max_model_len=128, cache=CacheConfig(block_size=4, num_blocks=64))
    kernels = eng.model_runner.model.kernels
    before = {k: getattr(kernels, k) for k in KERNEL_PATHS["unfused_cublas"]}
    with kernel_path(eng, "unfused_cublas"):
        assert kernels.fused_decode is False and kernels.skinny_max_m == 0
    assert {k: getattr(kernels, k) for k in before} == before
    with pytest.raises(RuntimeError), kernel_path(eng, "fused"):
        raise RuntimeError("restored even when the body fails")
    assert {k: getattr(kernels, k) for k in before} == before

    free = eng.block_manager.num_free_blocks
    seq, prefill_ms = decode_state(eng, prompt_len=9)
    assert prefill_ms > 0 and len(seq) == 10 and seq.num_computed_tokens == 9
    runner = eng.model_runner
    assert runner.input_ids[0].item() == seq.token_ids[-1] and runner.context_lens[0].item() == 10
    release(eng, seq)
    assert not eng.has_unfinished() and eng.block_manager.num_free_blocks == free
    prompt = [5, 6, 7]
    out = eng.generate([prompt], SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True))
    assert out == [reference(prompt)]
