"""Bad input never poisons the engine: every request is checked at admission and refused alone with an error
naming its field; a failing step aborts only its own sequences; abort frees a request's blocks; a seeded request
samples the same tokens whatever batch it shares. Greedy tokens are checked against Hugging Face throughout."""
import time

import pytest
import torch
from gpufolio_projects.inference_engine import LLM, SamplingParams
from gpufolio_projects.inference_engine.block_manager import BlockManager
from gpufolio_projects.inference_engine.config import CacheConfig, SchedulerConfig
from gpufolio_projects.inference_engine.errors import RequestError, RequestsFailed, StepError
from gpufolio_projects.inference_engine.scheduler import Scheduler

VOCAB = 97
GREEDY = SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True)


def _engine(path, num_blocks=256, budget=256, max_num_seqs=16, steps=4, max_model_len=128):
    return LLM(path, device="cpu", dtype="float32", max_model_len=max_model_len,
               cache=CacheConfig(block_size=4, num_blocks=num_blocks),
               scheduler=SchedulerConfig(max_num_seqs=max_num_seqs, max_num_batched_tokens=budget,
                                         num_decode_steps=steps))


@pytest.fixture(scope="module")
def engine(hf_checkpoint):
    return _engine(hf_checkpoint[0])


def _prompts(lens, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in lens]


def _assert_idle(eng):
    assert not eng.has_unfinished() and not eng.requests
    assert eng.block_manager.num_free_blocks == eng.block_manager.num_blocks


# Each invalid request: (prompt, params, the error type, the field it names).
INVALID = [
    ([5, VOCAB], GREEDY, ValueError, "prompt"),                      # token id = vocab size
    ([5, -1], GREEDY, ValueError, "prompt"),                         # negative token id
    ("hello", GREEDY, TypeError, "prompt"),                          # text, not token ids
    ([1.0, 2.0], GREEDY, TypeError, "prompt"),                       # float token ids
    ([1, True], GREEDY, TypeError, "prompt"),                        # a bool is no token id
    (torch.tensor([1, 2]), GREEDY, TypeError, "prompt"),             # a tensor prompt
    ([], GREEDY, ValueError, "prompt"),                              # empty
    (list(range(1, 90)) * 2, GREEDY, ValueError, "prompt"),          # 178 tokens >= max_model_len 128
    ([1, 2], {"max_tokens": 2.5}, TypeError, "max_tokens"),
    ([1, 2], {"max_tokens": "8"}, TypeError, "max_tokens"),          # a number given as a string
    ([1, 2], {"max_tokens": 0}, ValueError, "max_tokens"),
    ([1, 2], {"temperature": "0.7"}, TypeError, "temperature"),
    ([1, 2], {"temperature": -0.5}, ValueError, "temperature"),
    ([1, 2], {"temperature": float("nan")}, ValueError, "temperature"),
    ([1, 2], {"top_p": 0.0}, ValueError, "top_p"),
    ([1, 2], {"top_k": 0}, ValueError, "top_k"),
    ([1, 2], {"seed": -3}, ValueError, "seed"),
    ([1, 2], {"seed": 1.5}, TypeError, "seed"),
    ([1, 2], {"ignore_eos": "yes"}, TypeError, "ignore_eos"),
    ([1, 2], {"max_new_tokens": 4}, ValueError, "max_new_tokens"),   # not a field: named as it was given
    ([1, 2], "greedy", TypeError, "params"),
]


@pytest.mark.parametrize("prompt,params,etype,field", INVALID)
def test_an_invalid_request_is_refused_by_name_and_the_engine_keeps_serving(engine, reference, prompt, params,
                                                                            etype, field):
    with pytest.raises(etype) as info:
        engine.add_request(prompt, params)
    assert isinstance(info.value, RequestError) and info.value.param == field
    assert str(info.value).startswith(f"{field}: ")
    _assert_idle(engine)
    good = _prompts([7], seed=1)[0]
    assert engine.generate([good], GREEDY) == [reference(good)]


def test_params_as_a_dict_or_none_are_accepted(engine, reference):
    p = _prompts([5], seed=2)[0]
    assert engine.generate([p], {"temperature": 0, "max_tokens": 12, "ignore_eos": True}) == [reference(p)]
    assert len(engine.generate([p], None)[0]) == SamplingParams().max_tokens  # the defaults (no EOS here)


@pytest.mark.parametrize("prompts,etype", [([1, 2, 3], TypeError), (torch.tensor([[1, 2]]), TypeError),
                                           ("a b", TypeError), (7, TypeError)])
def test_a_batch_that_is_not_a_list_of_prompts_is_refused_before_anything_runs(engine, prompts, etype):
    with pytest.raises(etype, match="prompts: "):
        engine.generate(prompts, GREEDY)
    _assert_idle(engine)


def test_a_params_list_of_the_wrong_length_is_refused(engine):
    with pytest.raises(ValueError, match="params: 1 given for 2 prompts"):
        engine.generate([[1], [2]], [GREEDY])
    _assert_idle(engine)


def test_good_requests_around_a_bad_one_complete_once_and_nothing_stays_queued(engine, reference):
    good = _prompts([6, 9], seed=3)
    before = engine.num_tokens_computed["prefill"]
    with pytest.raises(RequestsFailed) as info:
        engine.generate([good[0], [1, VOCAB + 5], good[1]], GREEDY)
    assert list(info.value.errors) == [1] and info.value.errors[1].param == "prompt"
    assert info.value.outputs == [reference(good[0]), None, reference(good[1])]
    assert engine.num_tokens_computed["prefill"] - before == 6 + 9  # each good prompt prefilled once
    _assert_idle(engine)


def test_the_pool_is_checked_against_max_model_len_at_construction(hf_checkpoint):
    with pytest.raises(ValueError, match="num_blocks=8 holds 32 tokens"):
        _engine(hf_checkpoint[0], num_blocks=8)


def test_the_scheduler_refuses_what_the_pool_can_never_hold():
    sched = Scheduler(SchedulerConfig(), BlockManager(4, 4), eos_token_id=None, max_model_len=512)
    with pytest.raises(ValueError, match="prompt: 20 prompt tokens"):
        sched.check_lengths(20, 1)
    with pytest.raises(ValueError, match="max_tokens: 10 prompt tokens \\+ 20"):
        sched.check_lengths(10, 20)
    sched.check_lengths(10, 7)  # 16 slots: fits exactly


def test_the_longest_prompt_an_exact_pool_holds_completes_in_bounded_time(hf_checkpoint):
    eng = _engine(hf_checkpoint[0], num_blocks=32, budget=64)  # 32 blocks of 4 = max_model_len
    t0 = time.perf_counter()
    out = eng.generate([_prompts([127], seed=4)[0]], GREEDY)
    assert len(out[0]) == 1  # max_model_len stops it after one token
    assert time.perf_counter() - t0 < 30
    _assert_idle(eng)


def test_abort_frees_a_running_and_a_waiting_request(hf_checkpoint, reference):
    eng = _engine(hf_checkpoint[0], max_num_seqs=2)
    a, b, c = _prompts([5, 8, 3], seed=5)
    sa = eng.add_request(a, GREEDY, request_id="a")
    eng.add_request(b, GREEDY, request_id="b")
    sc = eng.add_request(c, GREEDY, request_id="c")  # waits: max_num_seqs=2
    with pytest.raises(ValueError, match="request_id: 'a' is already running"):
        eng.add_request(a, GREEDY, request_id="a")
    eng.step()
    eng.step()
    assert eng.block_manager.num_free_blocks < eng.block_manager.num_blocks
    assert eng.abort("b") and eng.abort("c")
    assert not eng.abort("b") and not eng.abort("nobody")
    assert sc.finish_reason == "abort" and sc.block_table == []
    while eng.has_unfinished():
        eng.step()
    assert sa.completion_token_ids == reference(a) and sa.finish_reason == "length"
    _assert_idle(eng)


def test_closing_a_stream_early_aborts_its_requests(engine):
    it = engine.stream(_prompts([4, 6, 9], seed=6), GREEDY)
    next(it)
    it.close()
    _assert_idle(engine)


def test_a_failing_step_aborts_only_its_sequences(hf_checkpoint, reference, monkeypatch):
    eng = _engine(hf_checkpoint[0], budget=8)  # 8 tokens a prefill step: the poisoned prompt fills the first one
    poison = [0] * 8
    good = _prompts([3, 5, 7], seed=7)
    run = eng.model_runner.run

    def faulty(batch):
        if any(s.token_ids[:8] == poison for s in batch.seqs):
            raise RuntimeError("injected fault")
        return run(batch)

    monkeypatch.setattr(eng.model_runner, "run", faulty)
    with pytest.raises(RequestsFailed) as info:
        eng.generate([poison] + good, GREEDY)
    errors = info.value.errors
    assert list(errors) == [0] and isinstance(errors[0], StepError)
    assert "injected fault" in str(errors[0]) and isinstance(errors[0].__cause__, RuntimeError)
    assert info.value.outputs[1:] == [reference(p) for p in good]
    _assert_idle(eng)
    assert eng.generate(good, GREEDY) == [reference(p) for p in good]  # still serving


def test_a_seeded_request_samples_the_same_tokens_in_any_batch(hf_checkpoint):
    p = _prompts([6], seed=8)[0]
    seeded = SamplingParams(temperature=1.0, top_p=0.95, max_tokens=10, ignore_eos=True, seed=1234)
    others = SamplingParams(temperature=0.9, max_tokens=14, ignore_eos=True)
    alone = _engine(hf_checkpoint[0]).generate([p], seeded)[0]
    # in a batch of 7, and through preemption (a 40-block pool) with 1-step and 3-step decode
    crowd = _prompts([3, 20, 9, 31, 2, 14], seed=9)
    for steps, blocks in ((1, 256), (3, 40)):
        eng = _engine(hf_checkpoint[0], num_blocks=blocks, steps=steps, budget=16)
        outs = eng.generate(crowd[:3] + [p] + crowd[3:], [others] * 3 + [seeded] + [others] * 3)
        assert outs[3] == alone
    assert eng.scheduler.num_preemptions > 0
    other_seed = _engine(hf_checkpoint[0]).generate([p], SamplingParams(
        temperature=1.0, top_p=0.95, max_tokens=10, ignore_eos=True, seed=99))[0]
    assert other_seed != alone


def test_unseeded_requests_draw_seeds_from_the_engine_seed(hf_checkpoint):
    p = _prompts([5], seed=10)[0]
    sp = SamplingParams(temperature=1.0, max_tokens=10, ignore_eos=True)
    first, second = (_engine(hf_checkpoint[0]).generate([p, p], sp) for _ in range(2))
    assert first == second  # same engine seed, same admission order
    assert first[0] != first[1]  # two requests, two seeds


@pytest.mark.slow
def test_burst_of_1000_with_invalid_requests_mixed_in(hf_checkpoint, reference):
    """5% invalid requests among 1,000 against a 48-block pool (preemption, prefix hits): every valid one gets
    HF's greedy tokens, every invalid one its own error, and the pool ends empty."""
    eng = _engine(hf_checkpoint[0], num_blocks=48, budget=64, max_num_seqs=32)
    g = torch.Generator().manual_seed(13)
    distinct = _prompts(torch.randint(1, 30, (40,), generator=g).tolist(), seed=14)
    pick = torch.randint(0, len(distinct), (1000,), generator=g).tolist()
    outs_n = torch.randint(1, 5, (1000,), generator=g).tolist()
    prompts = [distinct[k] for k in pick]
    params = [SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True) for n in outs_n]
    bad = {i: INVALID[j % len(INVALID)] for j, i in enumerate(range(7, 1000, 20))}  # 50 of them
    for i, (prompt, sp, _, _) in bad.items():
        prompts[i], params[i] = prompt, sp
    t0 = time.perf_counter()
    with pytest.raises(RequestsFailed) as info:
        eng.generate(prompts, params)
    assert time.perf_counter() - t0 < 120
    errors, outputs = info.value.errors, info.value.outputs
    assert sorted(errors) == sorted(bad)
    for i, (_, _, etype, field) in bad.items():
        assert isinstance(errors[i], etype) and errors[i].param == field
    for i, out in enumerate(outputs):
        if i not in bad:
            assert out == reference(prompts[i])[:outs_n[i]], i
    _assert_idle(eng)
