"""Bench ``train_step``: one optimizer step (forward, backward, clip, fused AdamW) of the Llama-style model,
per mode, at the same params. Headline metric: MFU against the GPU's datasheet bf16 dense peak (gpufolio.datasheets;
an unlisted GPU is a skipped record); beside it MFU against the run's own cuBLAS ceiling, tokens/s, predicted and
measured peak memory.

Variants (one registry, VARIANTS):
  single_compile            baseline: one GPU, no process group, torch.compile per block, autocast bf16
  fsdp2_compile_noreshard   fully_shard per block then root, bf16 params / fp32 reduce, and
                            reshard_after_forward=False (gathered params kept to backward: one node's choice)
  fsdp2_compile             the same with resharding (ZeRO-3: the blocks are gathered again in backward)
  fsdp2_compile_ac          + full activation checkpointing (HFU reported)
  ddp_compile / ddp         DistributedDataParallel (1 rank here: the bucketing + all-reduce machinery)
  single, fsdp2             eager
On one rank FSDP2 runs its whole machinery (all-gather / reduce-scatter copies, casts, hooks) without a network.
On one GPU the process group has one rank, created inside the case (world size from the environment under
torchrun) and kept for the worker's lifetime: the harness may run the next case in the same process.

BENCHES also holds ``scaling``, the multi-GPU points (scaling_bench.py).

Importable without torch: torch and the model are imported inside ``case``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from gpufolio.api import Bench, Case, CheckResult, Timing, Unsupported, Variant

from .bench_common import MFU, MFU_UNIT, TUNED_STEP, StepWork, datasheet_peak_tflops, fresh_process_state, loss_falls
from .kernel_buckets import breakdown_metrics, profile_buckets
from .scaling_bench import BENCH as SCALING_BENCH  # the multi-GPU bench, beside its rank machinery

# The headline: the tuned step (bench_common.TUNED_STEP: cuDNN attention, fused projections, folded clip) at
#   B=32           the per-step costs (AdamW, clipping, FSDP2's parameter and gradient copies: ~6% of a B=16
#                  step in its profile) over twice the tokens; ~90 GB of 141 at the peak
HEADLINE = {"model": "llama_1b", "B": 32, "T": 2048, **TUNED_STEP}
# Last session's step, for comparison (full mode): B=8, separate projections, clipping as its own pass.
SESSION1 = {"model": "llama_1b", "B": 8, "T": 2048, "sdpa": "cudnn", "proj": "split", "clip": "foreach"}


@dataclass(frozen=True)
class VariantSpec:
    mode: str
    compile: bool = False
    ac: bool = False
    reshard_after_forward: bool = True


VARIANTS: dict[str, VariantSpec] = {  # the harness runs them in this order (the most wanted first)
    "single_compile": VariantSpec("single", compile=True),
    "fsdp2_compile_noreshard": VariantSpec("fsdp2", compile=True, reshard_after_forward=False),
    "fsdp2_compile": VariantSpec("fsdp2", compile=True),
    "fsdp2_compile_ac": VariantSpec("fsdp2", compile=True, ac=True),
    "ddp_compile": VariantSpec("ddp", compile=True),
    "single": VariantSpec("single"),
    "ddp": VariantSpec("ddp"),
    "fsdp2": VariantSpec("fsdp2"),
}


def ranks_here() -> int:
    """The process group's size: 1, or torchrun's WORLD_SIZE."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def configs(mode: str) -> list[dict]:
    ws = ranks_here()
    if mode == "dry":
        return [{"model": "tiny", "B": 2, "T": 64, "dtype": "float32", "sdpa": "auto", "proj": "fused",
                 "clip": "foreach", "world_size": ws}]
    headline = dict(HEADLINE, dtype="bfloat16", world_size=ws)
    if mode == "quick":
        return [headline]
    return [headline,
            dict(SESSION1, dtype="bfloat16", world_size=ws),
            dict(headline, B=16), dict(headline, B=8),  # the tuned step at smaller batches
            dict(headline, proj="split"),
            dict(headline, sdpa="auto"),  # whatever SDPA picks by itself
            dict(headline, model="llama_350m")]


def bf16_ceiling() -> float | None:
    """The run stamp's cuBLAS bf16 TFLOP/s (env.ceilings, measured in this worker before the cases, at 8192^3
    in quick and full runs alike); None where the stamp timed none (no CUDA)."""
    from gpufolio.stamp import last_ceilings

    return last_ceilings().get("bf16_tflops")


@dataclass
class Step:
    """One variant's trainer at one params point and what its numbers are computed from: what ``case`` hands the
    harness, and what profile_step.py profiles."""

    trainer: Any         # trainer.Trainer
    spec: VariantSpec
    vocab: int
    B: int               # sequences per rank
    T: int
    world: int
    device: Any          # the rank's device (the process group's, off the single mode)
    fpt: Any             # flops.FlopsPerToken at T (with the recompute of activation checkpointing)
    mem_pred_gib: float  # memory.py's predicted peak per rank
    peak_tflops: float   # the GPU's datasheet bf16 dense peak (StepWork)

    @property
    def tokens(self) -> int:
        return self.B * self.T * self.world

    @property
    def work(self) -> StepWork:
        return StepWork(tokens=self.tokens, flops=self.fpt.model * self.tokens, gpus=self.world,
                        peak_tflops=self.peak_tflops)

    def make_inputs(self, gen) -> dict:
        import torch

        # B sequences per rank; T + 1 tokens so inputs and targets are shifted views of one draw.
        seq = torch.randint(0, self.vocab, (self.B, self.T + 1), generator=gen, device=gen.device).to(self.device)
        return {"tokens": seq[:, :-1], "targets": seq[:, 1:]}

    def run(self, inputs: dict):
        return self.trainer.step(inputs["tokens"], inputs["targets"])

    def metrics(self, median_s: float) -> dict:
        """Tokens/s, memory, and MFU's companions (causal, against the stamped cuBLAS, HFU) at the median step."""
        import torch

        tok_s = self.tokens / median_s
        out = {"tok_s": (tok_s, "tok/s", True), "mem_pred_gib": (self.mem_pred_gib, "GiB", False)}
        if self.device.type != "cuda":
            return out
        per_gpu = tok_s / self.world
        peak = self.peak_tflops * 1e12
        out.update({
            "mfu_causal": (100 * self.fpt.model_causal * per_gpu / peak, MFU_UNIT, True),
            "model_tflops": (self.fpt.model * per_gpu / 1e12, "TFLOP/s", True),
            "mem_peak_gib": (torch.cuda.max_memory_allocated(self.device) / 2**30, "GiB", False),
        })
        ceiling = bf16_ceiling()
        if ceiling:
            out["mfu_vs_cublas"] = (100 * self.fpt.model * per_gpu / (ceiling * 1e12), "% of stamped cuBLAS bf16",
                                    True)
            out["cublas_bf16_tflops"] = (ceiling, "TFLOP/s (stamped cuBLAS bf16)", True)  # what the ratio reads
        out["mem_pred_err"] = (100 * (self.mem_pred_gib / out["mem_peak_gib"][0] - 1), "%", False)
        if self.spec.ac:
            out["hfu"] = (100 * self.fpt.hardware * per_gpu / peak, MFU_UNIT, True)
        return out

    def breakdown(self, median_s: float) -> dict:
        """Where the timed step's time goes: two more steps under torch.profiler, kernel time by kind as shares of
        the median step (kernel_buckets.py). After the memory and timing numbers, so it changes neither. A
        profiler failure costs these metrics, never the record."""
        import torch

        try:
            seq = torch.randint(0, self.vocab, (self.B, self.T + 1), device=self.device)
            kernels, _, busy = profile_buckets(lambda: self.trainer.step(seq[:, :-1], seq[:, 1:]), 2,
                                               torch.cuda.synchronize)
            n = self.B * self.T  # this rank's kernels did this rank's tokens' work
            return breakdown_metrics(kernels, median_s * 1e3, self.fpt.dense * n, self.fpt.attention_causal * n,
                                     busy)
        except Exception as e:  # noqa: BLE001
            print(f"fsdp_mfu: step breakdown skipped: {type(e).__name__}: {e}", flush=True)
            return {}


def build_step(variant: str, params: dict, device, **train_fields) -> Step:
    """The trainer of ``variant`` at ``params`` (``train_fields`` override TrainConfig fields: profile_step.py's
    options), with its FLOPs, predicted memory and the GPU's datasheet peak."""
    from .configs import get_config
    from .flops import flops_per_token
    from .memory import predict
    from .trainer import TrainConfig, Trainer

    spec = VARIANTS[variant]
    peak = datasheet_peak_tflops(device)  # before building: an unlisted GPU is refused at once
    fresh_process_state(device)
    cfg = get_config(params["model"])
    B, T, world = int(params["B"]), int(params["T"]), int(params["world_size"])
    tcfg = TrainConfig(mode=spec.mode, dtype=params["dtype"], compile=spec.compile, ac=spec.ac,
                       reshard_after_forward=spec.reshard_after_forward, sdpa_backend=params["sdpa"],
                       fused_proj=params.get("proj", "split") == "fused", fold_clip=params.get("clip") == "folded",
                       lr=3e-4, seed=0)
    tcfg = replace(tcfg, **train_fields)
    trainer = Trainer(cfg, tcfg, device)
    if spec.mode != "single":
        device = trainer.dist.device
    mem = predict(cfg, B, T, mode=spec.mode, world_size=world, dtype=tcfg.dtype, compiled=tcfg.compile,
                  ac=tcfg.ac, reshard_after_forward=tcfg.reshard_after_forward, fused_proj=tcfg.fused_proj)
    return Step(trainer, spec, cfg.vocab_size, B, T, world, device,
                flops_per_token(cfg, T, activation_checkpointing=tcfg.ac), mem.peak / 2**30, peak)


def case(variant: str, params: dict, device) -> Case:
    if device.type != "cuda" and VARIANTS[variant].compile:
        raise Unsupported("torch.compile on CPU takes minutes per variant; dry mode runs the eager paths")
    if params["world_size"] != ranks_here():
        raise Unsupported(f"params want {params['world_size']} ranks, this process has {ranks_here()}")
    step = build_step(variant, params, device)

    def check(inputs: dict, loss) -> CheckResult:
        return loss_falls(loss, lambda: step.run(inputs))

    def extra_metrics(median_s: float) -> dict:
        out = step.metrics(median_s)
        if step.device.type == "cuda":
            out.update(step.breakdown(median_s))
        return out

    return Case(fn=step.run, make_inputs=step.make_inputs, work=step.work, check=check,
                timing=Timing(method="wall", warmup_ms=0.0, rep_ms=1500.0, min_reps=8, max_reps=40, warmup_min=3),
                extra_metrics=extra_metrics, reference_name="loss falls")


BENCHES = [
    Bench(
        project="fsdp_mfu", name="train_step", metric=MFU,
        variants=[Variant("single_compile", role="baseline", label="1 GPU, torch.compile, autocast bf16")]
        + [Variant(name, label=name.replace("_", " ")) for name in VARIANTS if name != "single_compile"],
        configs=configs, case=case,
        description="One optimizer step of a Llama-style decoder: MFU (% of the GPU's datasheet bf16 dense peak; "
                    "also vs the run's cuBLAS), tokens/s, predicted vs measured peak memory.",
        headline_params=HEADLINE, x_param="B",
    ),
    SCALING_BENCH,
]
