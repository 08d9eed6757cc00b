"""The benchmark worker: the only process that touches the GPU. It runs one job at a time for the runner.

A job is one (project, bench, variant, params): build the case, gate it, time it, gate it again, and send
back the measured part of a record. After an error that leaves the CUDA context unusable (an illegal memory
access, a device-side assert) the worker exits, and the runner starts a fresh one for the next job.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from .api import Unsupported
from .check import run_check
from .projects import find_bench

# Messages after which a CUDA context cannot be trusted any more.
FATAL_CUDA = ("illegal memory access", "device-side assert", "unspecified launch failure", "misaligned address",
              "illegal instruction", "CUDA error: an illegal", "cudaErrorLaunchFailure", "uncorrectable ECC")


def _sync_fn(device):
    import torch

    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def _peak_extra_bytes(case, inputs, device) -> dict[str, Any] | None:
    """Peak memory one call allocates beyond what is live before it (inputs, weights, caches)."""
    import torch

    if device.type != "cuda":
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = case.fn(inputs)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del out
    return {"peak_allocated_bytes": float(peak), "peak_extra_bytes": float(peak - before)}


def _merge_checks(before: dict, after: dict | None) -> dict:
    """One correctness entry for the record: passed only if both passes passed; both passes kept."""
    worst = after if (after is not None and not after["passed"]) or before["passed"] else before
    merged = dict(worst)
    merged["passed"] = before["passed"] and (after is None or after["passed"])
    merged["checks"] = [dict(c, phase="before_timing") for c in before.get("checks", [])]
    if after is not None:
        merged["checks"] += [dict(c, phase="after_timing") for c in after.get("checks", [])]
    merged["detail"] = {"before_timing": before.get("detail"), "after_timing": after.get("detail") if after else None}
    return merged


def run_case(job: dict) -> dict[str, Any]:
    """Execute one job; never raises for a failing case (the failure is the result)."""
    import torch

    bench = find_bench(job["project"], job["bench"])
    variant = bench.variant(job["variant"])
    dry = job["mode"] == "dry"
    device = torch.device("cpu" if dry else "cuda")
    result: dict[str, Any] = {"status": "error", "message": None, "metric": None, "extra_metrics": [],
                              "timing": None, "work": {}, "correctness": None, "memory": None}
    reason = variant.available() if variant.available else None
    if reason:
        return result | {"status": "skipped", "message": reason}
    try:
        case = bench.case(variant.name, dict(job["params"]), device)
    except Unsupported as e:
        return result | {"status": "skipped", "message": str(e) or "unsupported"}
    result["work"] = {"flops": case.work.flops, "bytes": case.work.bytes, "tokens": case.work.tokens}
    sync = _sync_fn(device)
    gen = torch.Generator(device=device)
    seed = int(job["seed"])

    gen.manual_seed(seed)
    before = run_check(case, gen, sync)
    if not before["passed"]:
        return result | {"status": "failed_correctness", "correctness": _merge_checks(before, None),
                         "message": "failed the correctness check before timing; not timed"}

    gen.manual_seed(seed + 1)
    inputs = case.make_inputs(gen)
    result["memory"] = _peak_extra_bytes(case, inputs, device)
    t = case.timing
    if dry or t.method == "wall":
        from .timing import time_wall

        stats = time_wall(lambda: case.fn(inputs), warmup_ms=t.warmup_ms, rep_ms=t.rep_ms,
                          min_reps=3 if dry else t.min_reps, max_reps=t.max_reps,
                          warmup_min=1 if dry else t.warmup_min, sync=sync)
    else:
        from .timing import time_events

        stats = time_events(lambda: case.fn(inputs), warmup_ms=t.warmup_ms, rep_ms=t.rep_ms, min_reps=t.min_reps,
                            max_reps=t.max_reps, warmup_min=t.warmup_min, flush_l2=t.flush_l2,
                            cuda_graph=t.cuda_graph)
    inputs = None  # free the timed inputs before the second check

    gen.manual_seed(seed + 2)
    after = run_check(case, gen, sync)
    median_s = stats.median_ms / 1e3
    m = bench.metric
    result["metric"] = {"name": m.name, "unit": m.unit, "value": m.value(case.work, median_s),
                        "higher_is_better": m.higher_is_better}
    if case.extra_metrics is not None:
        result["extra_metrics"] = [
            {"name": k, "unit": v[1], "value": float(v[0]), "higher_is_better": bool(v[2])}
            for k, v in case.extra_metrics(median_s).items()
        ]
    if result["memory"]:
        result["extra_metrics"].append({"name": "peak_extra_mem", "unit": "GiB",
                                        "value": result["memory"]["peak_extra_bytes"] / 2**30,
                                        "higher_is_better": False})
    result["timing"] = stats.as_dict()
    result["correctness"] = _merge_checks(before, after)
    if not after["passed"]:
        return result | {"status": "failed_correctness", "message": "failed the correctness check after timing"}
    return result | {"status": "dry_run" if dry else "ok"}


def _classify(exc: BaseException) -> tuple[str, bool]:
    """(status, fatal): OOM is recoverable; a corrupted CUDA context is not."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, Unsupported):
        return "skipped", False
    if "OutOfMemoryError" in type(exc).__name__ or "out of memory" in text.lower():
        return "oom", False
    return "error", any(s.lower() in text.lower() for s in FATAL_CUDA)


def stamp(job: dict) -> dict[str, Any]:
    from .stamp import collect_env, gpu_state, measure_ceilings

    if job.get("end"):
        return {"clocks_end": gpu_state(0)}
    ceilings = {} if job.get("dry") else measure_ceilings(quick=bool(job.get("quick")))
    return collect_env(ceilings)


def serve(conn, log_path: str | None) -> None:
    """Worker main loop: receive a job, send ``{"ok": result}`` or ``{"status": ..., "message": ...}``."""
    if log_path:  # keep the runner's progress bar clean; the log is kept beside the results
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        print(f"--- job {job.get('kind')} {job.get('project', '')}/{job.get('bench', '')} "
              f"{job.get('variant', '')} {job.get('params', '')}", flush=True)
        fatal = False
        try:
            if job["kind"] == "ping":
                import torch  # noqa: F401 - the slow import happens here, outside any job's timeout

                reply = {"ok": {}}
            else:
                reply = {"ok": stamp(job) if job["kind"] == "stamp" else run_case(job)}
        except BaseException as exc:  # noqa: BLE001 - the failure is the result
            status, fatal = _classify(exc)
            tb = traceback.format_exc()
            print(tb, flush=True)
            reply = {"status": status, "message": f"{type(exc).__name__}: {exc}"[:2000], "traceback": tb[-4000:]}
            if status == "oom":
                try:
                    import torch

                    torch.cuda.empty_cache()
                except Exception:  # noqa: BLE001
                    pass
        conn.send(reply)
        if fatal:
            print("fatal CUDA error: this worker exits; the runner starts a fresh one", flush=True)
            os._exit(3)
