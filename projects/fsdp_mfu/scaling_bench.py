"""Bench ``scaling``: one training step on N GPUs (N = 1, 2, 4, 8) under DDP, FSDP2 and HSDP, weak and strong
scaling, for the ~1B and the Llama-3-8B-shaped configs (scaling.py: the points and their arithmetic).

Each case starts N ranks under torchrun and drives them from the harness's worker (rank_pool.py), so the
harness times, checks and stamps a multi-GPU step like any other: one record per (point, strategy). Headline
metric: MFU per GPU (% of the GPU's datasheet bf16 dense peak), as train_step's; the harness's worker is not one of
the ranks, so the work names how many GPUs shared it. Beside it: global and per-GPU tokens/s,
predicted and measured (the largest over ranks) peak memory per rank, NCCL's share of the step and the share of it hidden behind
compute (comm_profile.py), and the mean loss of the first LOSS_STEPS steps from the same initial weights on
fixed data — the same tokens at every N of a strong-scaling line, so those losses must agree with the one-GPU
point's. Scaling efficiency compares two records (scaling.efficiency; plot_scaling.py draws it).

A point whose predicted peak (memory.py) does not fit one GPU, or that needs more GPUs than the machine has,
is a ``skipped`` record saying which. ``peak_extra_mem``, which the harness measures in its own process, is the
controller's, not a rank's. Run it alone (``--bench scaling``): the ranks share the GPUs with the worker.

Importable without torch. Two environment variables cut the sweep into calls of a few minutes each:
FSDP_MFU_SCALING_MODELS (e.g. ``llama_1b``) and FSDP_MFU_SCALING_GPUS (e.g. ``1,2,4``).
"""
from __future__ import annotations

import os

from gpufolio.api import Bench, Case, CheckResult, Timing, Unsupported, Variant

from . import scaling as S
from .bench_common import MFU, MFU_UNIT, TUNED_STEP, StepWork, datasheet_peak_tflops, fresh_process_state, loss_falls

LOSS_STEPS = 3  # steps from the initial weights on fixed data, before timing (they are also the warm-up)
PROFILE_STEPS = 2
HEADLINE_POINT = {"model": "llama_1b", "scaling": "weak", "gpus": 8}


def _selected(values: str | None, cast) -> set | None:
    return None if not values else {cast(v) for v in values.split(",") if v}


def configs(mode: str) -> list[dict]:
    if mode == "dry":  # CPU, gloo, 4 ranks: every strategy (HSDP as 2 groups of 2), tiny fp32 model, eager
        return [{"model": "tiny", "scaling": "weak", "gpus": 4, "B": 2, "G": 8, "T": 32, "hsdp_shard": 2,
                 "reshard": True, "dtype": "float32", "sdpa": "auto", "proj": "fused", "clip": "foreach"}]
    step = {"dtype": "bfloat16", **TUNED_STEP}  # the one-GPU headline's step at every point
    models = _selected(os.environ.get("FSDP_MFU_SCALING_MODELS"), str)
    gpu_counts = _selected(os.environ.get("FSDP_MFU_SCALING_GPUS"), int)
    out: list[dict] = []
    for line in S.LINES:
        if models is not None and line.model not in models:
            continue
        for gpus in S.GPU_COUNTS:
            if gpu_counts is not None and gpus not in gpu_counts:
                continue
            p = line.point("fsdp2", gpus)  # the batch arithmetic; the strategy is the variant
            params = {"model": p.model, "scaling": p.scaling, "gpus": gpus, "B": p.batch_per_rank,
                      "G": p.global_batch, "T": p.seq, "hsdp_shard": line.hsdp_shard_at_8 if gpus == 8 else 0,
                      "reshard": line.reshard, **step}
            if params not in out:  # weak and strong lines share their one-GPU point
                out.append(params)
    if mode == "quick":
        return [c for c in out if all(c.get(k) == v for k, v in HEADLINE_POINT.items())]
    return out


def _point(variant: str, params: dict) -> S.Point:
    shard = int(params["hsdp_shard"]) if variant == "hsdp" else 0
    if variant == "hsdp" and not shard:
        raise Unsupported(f"HSDP is measured where the point names its shard groups (at 8 GPUs), not at "
                          f"{params['gpus']}")
    return S.Point(params["model"], variant, params["scaling"], int(params["gpus"]), int(params["B"]),
                   int(params["T"]), hsdp_shard=shard, reshard=bool(params["reshard"]) or variant == "ddp")


def _refuse_what_cannot_run(point: S.Point, device) -> None:
    import torch

    if device.type != "cuda":
        return
    have = torch.cuda.device_count()
    if point.gpus > have:
        raise Unsupported(f"needs {point.gpus} GPUs, this machine has {have}")
    capacity = torch.cuda.get_device_properties(0).total_memory / 2**30
    pred = S.predicted_peak_gib(point)
    if pred > S.FIT_SHARE * capacity:
        raise Unsupported(f"{point.strategy} does not fit: memory.py predicts {pred:.0f} GiB per rank, more than "
                          f"{100 * S.FIT_SHARE:.0f}% of the GPU's {capacity:.0f} GiB")


def case(variant: str, params: dict, device) -> Case:
    import torch

    from . import rank_pool
    from .configs import get_config
    from .flops import flops_per_token

    point = _point(variant, params)
    _refuse_what_cannot_run(point, device)
    peak_tflops = datasheet_peak_tflops(device)
    cfg = get_config(point.model)
    on_cuda = device.type == "cuda"
    fresh_process_state(device)  # the worker's own cached blocks (earlier cases) would crowd rank 0's GPU
    train_config = {"mode": point.mode, "dtype": params["dtype"], "compile": on_cuda,
                    "reshard_after_forward": point.reshard, "shard_size": point.hsdp_shard,
                    "sdpa_backend": params["sdpa"], "fused_proj": params["proj"] == "fused",
                    "fold_clip": params["clip"] == "folded", "lr": 3e-4, "seed": 0}
    pool = rank_pool.pool(point.gpus, device.type)
    built = pool.call("build", train_config=train_config, model=point.model, batch_per_rank=point.batch_per_rank,
                      seq=point.seq)
    per_rank_losses = pool.call("losses", steps=LOSS_STEPS, data_seed=0)
    losses = [sum(step) / len(step) for step in zip(*per_rank_losses)]  # equal local batches: the global mean

    def make_inputs(gen) -> dict:
        # a seed, not tokens: each rank draws its own batch on its device from it (rank_main.Rank.step)
        return {"seed": torch.randint(0, 2**31 - 1, (1,), generator=gen, device=gen.device)}

    def fn(inputs: dict):
        per_rank = pool.call("step", seed=int(inputs["seed"]))
        return torch.tensor(sum(per_rank) / len(per_rank))

    def check(inputs: dict, loss) -> CheckResult:
        return loss_falls(loss, lambda: fn(inputs), subject="mean loss over ranks")

    fpt = flops_per_token(cfg, point.seq)
    tokens = point.tokens_per_step
    mem_pred = S.predicted_peak_gib(point, compiled=on_cuda, fused_proj=train_config["fused_proj"])

    def extra_metrics(median_s: float) -> dict:
        tok_s = tokens / median_s
        out = {"tok_s": (tok_s, "tok/s", True), "tok_s_per_gpu": (tok_s / point.gpus, "tok/s", True),
               "mem_pred_gib": (mem_pred, "GiB", False),
               "build_s": (max(b["build_s"] for b in built), "s", False)}
        out.update({f"loss_step{i + 1}": (v, "nats", False) for i, v in enumerate(losses)})
        if not on_cuda:
            return out
        out["mfu_causal"] = (100 * fpt.model_causal * tok_s / point.gpus / (peak_tflops * 1e12), MFU_UNIT, True)
        peak_gib = max(m["peak_gib"] for m in pool.call("memory"))
        out["mem_peak_gib"] = (peak_gib, "GiB (largest rank)", False)
        out["mem_pred_err"] = (100 * (mem_pred / peak_gib - 1), "%", False)
        try:  # after memory and timing, so it changes neither; a profiler failure costs these metrics only
            from .comm_profile import comm_metrics

            out.update(comm_metrics(pool.call("profile", steps=PROFILE_STEPS, seed=12345), median_s * 1e3))
        except rank_pool.RankError as e:
            print(f"fsdp_mfu scaling: communication profile skipped: {e}", flush=True)
        return out

    return Case(fn=fn, make_inputs=make_inputs, check=check, reference_name="loss falls",
                work=StepWork(tokens=tokens, flops=fpt.model * tokens, gpus=point.gpus, peak_tflops=peak_tflops),
                timing=Timing(method="wall", warmup_ms=0.0, rep_ms=1500.0, min_reps=8, max_reps=40, warmup_min=3),
                extra_metrics=extra_metrics)


BENCH = Bench(
    project="fsdp_mfu", name="scaling", metric=MFU,
    variants=[Variant("ddp", role="baseline", label="DDP (full replica per rank, all-reduce)"),
              Variant("fsdp2", label="FSDP2 (sharded over all ranks)"),
              Variant("hsdp", label="HSDP (sharded in groups, replicated across them)")],
    configs=configs, case=case,
    description="One optimizer step on N GPUs under DDP, FSDP2 and HSDP, weak and strong scaling: MFU per GPU, "
                "tokens/s, peak memory per rank (predicted vs measured), NCCL time and its overlap with compute.",
    headline_params=HEADLINE_POINT, x_param="gpus",
)
