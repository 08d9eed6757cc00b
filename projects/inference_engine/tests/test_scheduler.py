"""Scheduler: prefill first within the token budget, chunked prompts, decode with multi-step lookahead,
preemption by recompute when the pool runs short."""
from gpufolio_projects.inference_engine.block_manager import BlockManager
from gpufolio_projects.inference_engine.config import SchedulerConfig
from gpufolio_projects.inference_engine.sampling_params import SamplingParams
from gpufolio_projects.inference_engine.scheduler import Scheduler
from gpufolio_projects.inference_engine.sequence import Sequence, Status


def _sched(num_blocks=64, bs=4, budget=32, max_seqs=8, steps=1):
    bm = BlockManager(num_blocks, bs)
    cfg = SchedulerConfig(max_num_seqs=max_seqs, max_num_batched_tokens=budget, num_decode_steps=steps)
    return Scheduler(cfg, bm, eos_token_id=None, max_model_len=512), bm


def _seq(n, max_tokens=8):
    return Sequence(list(range(1, n + 1)), SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True))


def _run(s, batch, token=7):
    """Pretend the model ran: every sequence that samples gets ``token``."""
    sampled = []
    for seq, n in zip(batch.seqs, batch.num_tokens):
        if batch.is_prefill:
            sampled.append([token] if seq.num_computed_tokens + n == len(seq) else [])
        else:
            sampled.append([token] * batch.num_steps)
    return s.postprocess(batch, sampled)


def test_prefill_respects_the_token_budget_and_chunks_long_prompts():
    s, _ = _sched(budget=32)
    for n in (10, 15, 20):
        s.add(_seq(n))
    b = s.schedule()
    assert b.is_prefill and b.num_tokens == [10, 15, 7]  # the third prompt is cut at the budget
    assert sum(b.num_tokens) <= 32
    _run(s, b)
    b = s.schedule()
    assert b.is_prefill and b.num_tokens == [13]  # its remainder first
    _run(s, b)
    b = s.schedule()
    assert not b.is_prefill and len(b.seqs) == 3


def test_max_num_seqs_caps_admission():
    s, _ = _sched(budget=1000, max_seqs=2)
    for _ in range(5):
        s.add(_seq(3))
    b = s.schedule()
    assert len(b.seqs) == 2 and len(s.waiting) == 3


def test_decode_preempts_the_newest_when_blocks_run_out():
    s, bm = _sched(num_blocks=4, bs=4, budget=100)
    a, b = _seq(4, max_tokens=8), _seq(4, max_tokens=8)
    s.add(a)
    s.add(b)
    _run(s, s.schedule())  # both prefilled: 1 block each, 2 free
    assert bm.num_free_blocks == 2
    for _ in range(6):  # decode until the 4 blocks cannot cover both sequences
        _run(s, s.schedule())
        if s.num_preemptions:
            break
    assert s.num_preemptions == 1
    assert b.status == Status.WAITING and b.block_table == [] and b.num_computed_tokens == 0
    assert a.status == Status.RUNNING
    # when `a` finishes, `b` comes back through a prefill of prompt + its generated tokens
    while s.has_unfinished():
        _run(s, s.schedule())
    assert a.num_completion_tokens == 8 and b.num_completion_tokens == 8
    assert bm.num_free_blocks == 4


def test_multi_step_decode_reserves_lookahead_slots_and_drops_tokens_past_the_stop():
    s, bm = _sched(num_blocks=64, bs=4, steps=8)
    seq = _seq(3, max_tokens=5)
    s.add(seq)
    _run(s, s.schedule())  # prefill samples token 1 of 5
    batch = s.schedule()
    assert not batch.is_prefill and batch.num_steps == 4  # only 4 tokens remain
    assert len(seq.block_table) * 4 >= len(seq) - 1 + 4
    _run(s, batch)
    assert seq.is_finished and seq.num_completion_tokens == 5
    assert bm.num_free_blocks == 64


def test_multi_step_falls_back_to_one_step_before_preempting():
    s, bm = _sched(num_blocks=5, bs=4, steps=8)
    a, b = _seq(4, max_tokens=8), _seq(4, max_tokens=8)
    s.add(a)
    s.add(b)
    _run(s, s.schedule())  # 1 block each, 3 free
    batch = s.schedule()  # 7 steps would need 2 more blocks each; 1 step needs 1 each
    assert batch.num_steps == 1 and s.num_preemptions == 0 and len(batch.seqs) == 2


def test_lookahead_reserves_only_up_to_each_sequences_stop():
    s, bm = _sched(num_blocks=5, bs=4, steps=8)
    a, b = _seq(4, max_tokens=8), _seq(4, max_tokens=2)
    s.add(a)
    s.add(b)
    _run(s, s.schedule())
    batch = s.schedule()
    assert batch.num_steps == 7  # a needs 7 more tokens; b reserves for its 1, not for 7
    assert len(a.block_table) == 3 and len(b.block_table) == 2
