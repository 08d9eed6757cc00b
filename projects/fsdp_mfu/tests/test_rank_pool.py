"""The multi-rank bench machinery on CPU ranks (gloo): rank_pool drives torchrun's ranks (rank_main) from one
process; the losses they train to are the single-process losses on the same global batches; a failing rank
closes the pool with its error; and the harness runs the scaling bench's dry config end to end."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from gpufolio_projects.fsdp_mfu import launch, rank_pool  # noqa: E402
from gpufolio_projects.fsdp_mfu.configs import get_config  # noqa: E402
from gpufolio_projects.fsdp_mfu.data import BatchSpec, SyntheticBatches  # noqa: E402
from gpufolio_projects.fsdp_mfu.trainer import TrainConfig, Trainer  # noqa: E402

B, T, STEPS = 2, 32, 3
TCFG = {"dtype": "float32", "lr": 1e-3, "seed": 3}


def _single_losses(global_batch: int) -> list[float]:
    cfg = get_config("tiny")
    tr = Trainer(cfg, TrainConfig(mode="single", **TCFG), torch.device("cpu"))
    data = SyntheticBatches(cfg.vocab_size, BatchSpec(global_batch, T), seed=5)
    return [float(tr.step(*data.batch(s))) for s in range(STEPS)]


@pytest.fixture
def pool():
    p = rank_pool.pool(2, "cpu")
    yield p
    rank_pool.close()


def test_ranks_train_to_the_single_process_losses(pool):
    assert pool.call("environment", names=sorted(launch.MULTICAST_OFF)) == [launch.MULTICAST_OFF] * 2
    reference = _single_losses(2 * B)
    for mode in ("ddp", "fsdp2"):
        pool.call("build", train_config={"mode": mode, **TCFG}, model="tiny", batch_per_rank=B, seq=T)
        per_rank = pool.call("losses", steps=STEPS, data_seed=5)
        mean = [sum(step) / 2 for step in zip(*per_rank)]
        assert mean == pytest.approx(reference, rel=1e-5), mode
        losses = [pool.call("step", seed=s) for s in (1, 1)]  # the same seed twice: same tokens, lower loss
        assert sum(losses[1]) < sum(losses[0])
    assert pool.call("memory") == [{}, {}] and pool.call("profile", steps=1, seed=0) == [{}, {}]  # CUDA only


def test_a_failing_rank_closes_the_pool_with_its_error(pool):
    with pytest.raises(rank_pool.RankError, match="unknown model config"):
        pool.call("build", train_config={"mode": "ddp", **TCFG}, model="no_such_model", batch_per_rank=B, seq=T)
    assert not pool.alive and pool.proc.returncode is not None
    assert rank_pool.pool(2, "cpu") is not pool  # the next case gets a fresh one


@pytest.mark.slow  # four CPU ranks through the harness: about 40 s
def test_harness_runs_the_scaling_bench_on_cpu_ranks(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gpufolio", "bench", "--project", "fsdp_mfu", "--bench", "scaling",
                           "--dry-run", "--out", str(tmp_path), "--no-progress"],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for f in (tmp_path / "fsdp_mfu").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert {r["variant"]: r["status"] for r in records} == {"ddp": "dry_run", "fsdp2": "dry_run", "hsdp": "dry_run"}
    assert all(r["correctness"]["passed"] and r["params"]["gpus"] == 4 for r in records)
    loss = {r["variant"]: {m["name"]: m["value"] for m in r["extra_metrics"]}["loss_step3"] for r in records}
    assert loss["fsdp2"] == pytest.approx(loss["ddp"], rel=1e-5) and loss["hsdp"] == pytest.approx(loss["ddp"], rel=1e-5)


@pytest.mark.gpu
def test_two_gpu_ranks_train_to_the_one_gpu_losses():
    """NCCL on two GPUs, fp32: DDP and FSDP2 through the pool against one GPU on the same global batches."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    cfg = get_config("tiny")
    tr = Trainer(cfg, TrainConfig(mode="single", **TCFG), torch.device("cuda", 0))
    data = SyntheticBatches(cfg.vocab_size, BatchSpec(2 * B, T), seed=5)
    reference = [float(tr.step(*data.batch(s, tr.device))) for s in range(STEPS)]
    try:
        p = rank_pool.pool(2, "cuda")
        for mode in ("ddp", "fsdp2"):
            p.call("build", train_config={"mode": mode, **TCFG}, model="tiny", batch_per_rank=B, seq=T)
            mean = [sum(step) / 2 for step in zip(*p.call("losses", steps=STEPS, data_seed=5))]
            assert mean == pytest.approx(reference, rel=1e-4), mode
            assert all(m["peak_gib"] > 0 for m in p.call("memory"))
            comm = p.call("profile", steps=1, seed=0)
            assert all(c["nccl_ms"] > 0 for c in comm), comm  # two ranks: collectives ran on the GPU
    finally:
        rank_pool.close()
