"""The scaling sweep's arithmetic (weak / strong batches, efficiency), which points the memory model lets run,
the bench's configs, and the per-GPU MFU metric. No processes: the multi-rank paths are in test_rank_pool.py."""
from __future__ import annotations

import pytest
from gpufolio_projects.fsdp_mfu import scaling as S
from gpufolio_projects.fsdp_mfu import scaling_bench as SB


def test_weak_scaling_keeps_the_per_rank_batch():
    for n in S.GPU_COUNTS:
        p = S.weak("llama_1b", "fsdp2", n, 32, 2048)
        assert p.batch_per_rank == 32 and p.global_batch == 32 * n and p.tokens_per_step == 32 * n * 2048
    assert S.weak("llama_1b", "ddp", 1, 32, 2048).scaling == "base"


def test_strong_scaling_splits_a_fixed_global_batch():
    per_rank = [S.strong("llama_1b", "fsdp2", n, 32, 2048).batch_per_rank for n in S.GPU_COUNTS]
    assert per_rank == [32, 16, 8, 4]
    assert {S.strong("llama_1b", "ddp", n, 32, 2048).global_batch for n in S.GPU_COUNTS} == {32}
    with pytest.raises(ValueError, match="does not split"):
        S.strong("llama_1b", "fsdp2", 8, 12, 2048)


def test_point_validation():
    with pytest.raises(ValueError, match="strategy"):
        S.Point("llama_1b", "zero2", "weak", 2, 1, 128)
    with pytest.raises(ValueError, match="hsdp"):
        S.Point("llama_1b", "hsdp", "weak", 8, 1, 128, hsdp_shard=3)  # 3 does not divide 8
    with pytest.raises(ValueError, match="hsdp"):
        S.Point("llama_1b", "hsdp", "weak", 8, 1, 128, hsdp_shard=8)  # one group: that is FSDP2
    with pytest.raises(ValueError, match="hsdp_shard"):
        S.Point("llama_1b", "fsdp2", "weak", 8, 1, 128, hsdp_shard=4)
    with pytest.raises(ValueError, match="base"):
        S.Point("llama_1b", "ddp", "base", 2, 1, 128)
    p = S.Point("llama_1b", "hsdp", "weak", 8, 1, 128, hsdp_shard=4)
    assert p.mode == "fsdp2" and p.shard_ranks == 4
    assert S.Point("llama_1b", "ddp", "weak", 8, 1, 128).shard_ranks == 1


def test_efficiency_against_linear_scaling_from_the_base():
    assert S.efficiency(8000.0, 8, 1000.0) == pytest.approx(1.0)  # perfect
    assert S.efficiency(7200.0, 8, 1000.0) == pytest.approx(0.9)
    # strong scaling: a step of 100 ms on 1 GPU and 16 ms on 8 (same tokens per step) -> 100 / (8 * 16)
    tokens = 32 * 2048
    assert S.efficiency(tokens / 0.016, 8, tokens / 0.100) == pytest.approx(100 / 128)
    # a line whose smallest point is 2 GPUs (the 8B shape does not fit one): 4 GPUs at 1.8x of 2 GPUs' rate
    assert S.efficiency(1800.0, 4, 1000.0, base_gpus=2) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        S.efficiency(1.0, 1, 0.0)
    with pytest.raises(ValueError):
        S.efficiency(1.0, 2, 1.0, base_gpus=4)


def test_the_memory_model_decides_which_points_run():
    pts = [p for line in S.LINES for p in S.points(line)]
    by = {(p.model, p.scaling, p.strategy, p.gpus): S.fits(p) for p in pts}
    assert all(ok for (model, *_), ok in by.items() if model == "llama_1b")  # the ~1B model fits everywhere
    # 8B: DDP never fits (16 bytes of state per parameter alone is ~120 GiB); FSDP2 fits from 2 GPUs at B=1
    assert not any(ok for (model, _, strategy, _), ok in by.items() if model == "llama_8b" and strategy == "ddp")
    assert not by[("llama_8b", "base", "fsdp2", 1)]
    assert by[("llama_8b", "weak", "fsdp2", 2)] and by[("llama_8b", "weak", "fsdp2", 8)]
    assert S.predicted_peak_gib(S.weak("llama_8b", "ddp", 1, 1, 8192)) > S.GPU_MEMORY_GIB
    assert {p.gpus for p in pts if p.strategy == "hsdp"} == {8}


def test_bench_configs_share_the_base_point_and_obey_the_filters(monkeypatch):
    full = SB.configs("full")
    keys = [tuple(sorted(c.items())) for c in full]
    assert len(keys) == len(set(keys))
    base_1b = [c for c in full if c["model"] == "llama_1b" and c["gpus"] == 1]
    assert len(base_1b) == 1 and base_1b[0]["scaling"] == "base"  # weak B=32 and strong G=32 share it
    assert {c["hsdp_shard"] for c in full if c["gpus"] == 8} == {4}
    assert {c["hsdp_shard"] for c in full if c["gpus"] != 8} == {0}
    assert SB.configs("quick") == [c for c in full if c["model"] == "llama_1b" and c["scaling"] == "weak"
                                   and c["gpus"] == 8]
    monkeypatch.setenv("FSDP_MFU_SCALING_MODELS", "llama_8b")
    monkeypatch.setenv("FSDP_MFU_SCALING_GPUS", "4,8")
    cut = SB.configs("full")
    assert cut and {(c["model"], c["gpus"]) for c in cut} == {("llama_8b", 4), ("llama_8b", 8)}


def test_hsdp_variant_needs_the_points_shard_groups():
    from gpufolio.api import Unsupported

    params = SB.configs("full")[1]  # llama_1b at 2 GPUs: no HSDP layout
    with pytest.raises(Unsupported, match="HSDP"):
        SB._point("hsdp", params)
    assert SB._point("fsdp2", params).shard_ranks == 2


def test_mfu_is_per_gpu_of_the_case():
    from gpufolio_projects.fsdp_mfu.bench_common import StepWork

    work = StepWork(tokens=1, flops=8 * 989e12, gpus=8, peak_tflops=989.0)  # one second of eight datasheet peaks
    assert SB.MFU.value(work, 1.0) == pytest.approx(100.0)
    assert SB.MFU.value(work, 2.0) == pytest.approx(50.0)
    from gpufolio.api import Work

    with pytest.raises(ValueError):
        SB.MFU.value(Work(flops=1.0), 1.0)
