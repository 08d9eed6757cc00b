"""Launch configs for the attention kernels, and the small tuner that picks one per shape class.

One registry (``CONFIGS``) holds every config each kernel may run with, per head dim. Why our own tuner and not
``triton.autotune``: the kernels take TMA tensor descriptors whose block shape depends on the config, which
``triton.autotune`` can only set through a ``pre_hook`` — and configs with a pre_hook are never cached on disk,
so every bench process would re-tune. Here the winner per key is kept in memory and in a JSON file, so a
process that finds it on disk launches the winner at once (and Triton's own cache holds its binary).

Tuning cost counts against the quick bench (≤ 2 min for the whole project), and compiling dominates it (one
to a few seconds a config): 2–3 configs per kernel per head dim, timed with a short ``do_bench`` (warmup 5 ms,
25 ms of reps).
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class KernelConfig:
    """block_m: query rows per program (or per inner step, for dK/dV); block_n: key rows per step (or per
    program, for dK/dV). num_warps / num_stages: Triton's warps per program and software-pipelining depth."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    # Triton's automatic warp specialisation of the main loop (producer warps for TMA, consumer warpgroups for
    # the math), forward only; experimental on Hopper in Triton 3.6.
    warp_specialize: bool = False

    def __str__(self) -> str:
        text = f"{self.block_m},{self.block_n},{self.num_warps},{self.num_stages}"
        return text + (",ws" if self.warp_specialize else "")

    @classmethod
    def parse(cls, text: str) -> KernelConfig:
        parts = text.split(",")
        ws = parts[-1] == "ws"
        nums = [int(x) for x in (parts[:-1] if ws else parts)]
        if len(nums) != 4:
            raise ValueError(f"a kernel config is 'block_m,block_n,num_warps,num_stages[,ws]', got {text!r}")
        return cls(*nums, warp_specialize=ws)


C = KernelConfig
# Hopper (H200) candidates. Forward: 128 query rows per program, as FA2/FA3 do; BLOCK_N 128 with 8 warps (two
# warpgroups, each owning 64 rows of S = Q·Kᵀ and of O) or 64 with 4. dK/dV: a program owns BLOCK_N key rows
# (dK and dV accumulate in registers: 2·BLOCK_N·D fp32, 128 registers a thread at 128×128 with 8 warps) and steps
# over BLOCK_M query rows. dQ: a program owns BLOCK_M query rows and steps over BLOCK_N key rows.
CONFIGS: dict[str, dict[int, list[KernelConfig]]] = {
    "fwd": {
        32: [C(128, 64, 4, 3), C(128, 128, 8, 3)],
        64: [C(128, 128, 8, 3), C(128, 64, 4, 3), C(128, 128, 4, 3)],
        # Round 1 (H200): 128,128,8,3 beat 128,64,4,3 (which spills at 255 registers) by 10%.
        # Warp-specialised configs (…,ws) are tried by experiment.py first, outside the bench: a hang there costs
        # seconds, not the round.
        128: [C(128, 128, 8, 3), C(128, 128, 8, 2)],
        256: [C(128, 64, 8, 2), C(64, 64, 4, 2)],
    },
    "bwd_dkdv": {
        32: [C(64, 128, 8, 3), C(32, 128, 4, 3)],
        64: [C(64, 128, 8, 3), C(32, 128, 4, 3), C(64, 64, 4, 3)],
        # Round 1: 64,128,8,2 (255 registers, 30–62 spilled) still beat 32,128,8,3 (2–20 spilled) by 10%.
        128: [C(64, 128, 8, 2), C(64, 128, 8, 3), C(64, 64, 8, 3)],
        256: [C(32, 64, 8, 2), C(32, 64, 4, 2)],
    },
    # dK/dV with dQ's atomics in the same program: one more matmul and an fp32 [BLOCK_M, D] dQ tile a step.
    "bwd_dkdv_atomic": {
        32: [C(64, 128, 8, 2), C(32, 128, 4, 2)],
        64: [C(64, 128, 8, 2), C(64, 64, 4, 2), C(32, 128, 4, 2)],
        # Round 1: 64,128,8,2 beat 32,128,8,2; both spill heavily (74–124) — the extra dQ tile does not fit.
        128: [C(64, 128, 8, 2)],
        256: [C(32, 64, 8, 2), C(32, 64, 4, 2)],
    },
    "bwd_dq": {
        32: [C(128, 64, 8, 3), C(128, 32, 4, 3)],
        64: [C(128, 64, 8, 3), C(128, 32, 4, 3), C(64, 64, 4, 3)],
        # Round 1: 128,32,8,3 (127 registers) beat 128,64,8,2 by 16–22%.
        128: [C(128, 32, 8, 3), C(128, 32, 8, 4)],
        256: [C(64, 32, 8, 2), C(64, 32, 4, 2)],
    },
}
# Under TRITON_INTERPRET=1 (CPU tests): small blocks so that tiny ragged shapes still span several blocks.
INTERPRET_CONFIG = {name: C(16, 16, 4, 1) for name in CONFIGS}

SUPPORTED_HEAD_DIMS = tuple(sorted(CONFIGS["fwd"]))


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def candidates(kernel: str, head_dim: int) -> list[KernelConfig]:
    """The configs `kernel` may use at `head_dim`; an env override GPUFOLIO_FA_<KERNEL>=bm,bn,w,s pins one
    (for profiling a single config under ncu)."""
    pinned = os.environ.get(f"GPUFOLIO_FA_{kernel.upper()}")
    if pinned:
        return [KernelConfig.parse(pinned)]
    if interpreting():
        return [INTERPRET_CONFIG[kernel]]
    if os.environ.get("GPUFOLIO_FA_NO_TUNE"):  # tests: the first config, one compile per kernel
        return list(CONFIGS[kernel][head_dim][:1])
    return list(CONFIGS[kernel][head_dim])


class Tuner:
    """Picks the fastest config per key (kernel, head dim, causal, dtype, length class, GPU), remembering it in
    memory and in a JSON file (``GPUFOLIO_FA_TUNE_FILE``, default ``~/.cache/gpufolio/flash_attention_tune.json``)."""

    def __init__(self, path: Path | None = None) -> None:
        default = Path.home() / ".cache" / "gpufolio" / "flash_attention_tune.json"
        self.path = Path(os.environ.get("GPUFOLIO_FA_TUNE_FILE", path or default))
        self._lock = threading.Lock()
        # key -> {"best": "bm,bn,w,s", "timings_us": {config: microseconds}} (the timings are kept as evidence)
        self._best: dict[str, dict] | None = None

    def _load(self) -> dict[str, dict]:
        if self._best is None:
            try:
                self._best = json.loads(self.path.read_text())
            except (OSError, ValueError):
                self._best = {}
        return self._best

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self._best, indent=1, sort_keys=True))
            tmp.replace(self.path)
        except OSError:
            pass  # a read-only home only costs re-tuning in the next process

    def pick(self, key: str, configs: list[KernelConfig], launch: Callable[[KernelConfig], None],
             outputs: Callable[[], list] | None = None) -> KernelConfig:
        """The config to use for `key`. With more than one candidate, each is launched (compiling it) and timed;
        a config that fails to compile or launch (e.g. out of shared memory) is skipped, and so is one whose
        ``outputs()`` differ from the first config's (a miscompiled experimental config must never win).
        A config being tried is marked "pending" on disk first: if it hangs or kills the process, the next
        process skips it instead of trying again."""
        if len(configs) == 1:
            return configs[0]
        verbose = os.environ.get("GPUFOLIO_FA_TUNE_VERBOSE")
        with self._lock:
            entry = self._load().setdefault(key, {})
            for cfg in configs:
                if str(cfg) == entry.get("best"):
                    return cfg
            crashed = set(entry.get("crashed", []))
            if entry.get("pending"):
                crashed.add(entry.pop("pending"))
                entry["crashed"] = sorted(crashed)
            import triton.testing

            timings: dict[KernelConfig, float] = {}
            expected = None
            for cfg in configs:
                if str(cfg) in crashed:
                    continue
                entry["pending"] = str(cfg)
                self._save()
                try:
                    t = triton.testing.do_bench(lambda cfg=cfg: launch(cfg), warmup=5, rep=25)
                    got = [o.float().clone() for o in outputs()] if outputs else None
                    if got is not None and expected is not None and not _close(got, expected):
                        if verbose:
                            print(f"[fa-tune] {key} {cfg}: outputs differ from {configs[0]}: rejected", flush=True)
                    else:
                        timings[cfg] = t
                        expected = expected if expected is not None else got
                except Exception as exc:  # noqa: BLE001 — OutOfResources, PTXAS errors: this config can't run
                    if verbose:
                        print(f"[fa-tune] {key} {cfg}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                entry.pop("pending", None)
            if not timings:
                raise RuntimeError(f"no attention config could launch for {key}: tried {[str(c) for c in configs]}")
            winner = min(timings, key=timings.get)
            if os.environ.get("GPUFOLIO_FA_TUNE_VERBOSE"):
                print(f"[fa-tune] {key}: " + ", ".join(f"{c}={t * 1e3:.0f}us" for c, t in timings.items()))
            entry["best"] = str(winner)
            entry["timings_us"] = {str(c): round(t * 1e3, 1) for c, t in timings.items()}
            self._save()
            return winner


def _close(got: list, expected: list) -> bool:
    """Outputs of two configs agree up to reordered fp32 sums and one low-precision rounding."""
    import torch

    for a, b in zip(got, expected, strict=True):
        diff = torch.where(a == b, 0.0, (a - b).abs())  # equal infinities (lse of empty rows) agree
        finite = torch.isfinite(b)
        scale = float(b[finite].abs().max()) if bool(finite.any()) else 1.0
        if not bool((diff <= 2e-2 * (scale or 1.0)).all()):  # NaN fails
            return False
    return True


TUNER = Tuner()


def length_class(seqlen_q: int, seqlen_k: int) -> str:
    """Coarse length bucket for the tuning key: short sequences favour smaller blocks (more programs)."""
    n = max(seqlen_q, seqlen_k)
    return "short" if n <= 1024 else "long"
