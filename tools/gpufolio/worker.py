"""The benchmark worker: the only process that touches the GPU. It runs one job at a time for the runner.

A job is one (project, bench, variant, params): build the case, gate it, time it, gate it again, and send
back the measured part of a record. After an error that leaves the CUDA context unusable (an illegal memory
access, a device-side assert) the worker exits, and the runner starts a fresh one for the next job.
"""
from __future__ import annotations

import math
import os
import sys
import time
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


PHASES = ("before_timing", "timed_rep", "after_timing")


def _merge_checks(*passes: dict | None) -> dict:
    """One correctness entry for the record: passed only if every pass passed; every pass kept by phase
    (before timing, the last timed repetition on its own inputs, after timing)."""
    ran = [(phase, p) for phase, p in zip(PHASES, passes) if p is not None]
    failed = [p for _, p in ran if not p["passed"]]
    merged = dict(failed[0] if failed else ran[-1][1])
    merged["passed"] = not failed
    merged["checks"] = [dict(c, phase=phase) for phase, p in ran for c in p.get("checks", [])]
    merged["detail"] = {phase: (p.get("detail") if p is not None else None) for phase, p in zip(PHASES, passes)}
    return merged


def _layout(value: Any) -> Any:
    """``value`` with each tensor replaced by its shape and dtype: all that an in-place refresh may not change."""
    from .check import _map_tensors

    return _map_tensors(value, lambda t: ("tensor", tuple(t.shape), t.dtype))


def _same_layout(old: Any, new: Any) -> bool:
    try:
        return bool(_layout(old) == _layout(new))
    except (RuntimeError, TypeError, ValueError):  # a leaf whose == is no bool (a numpy array): not the same
        return False


def _refresh_in_place(case, inputs: dict, gen, *, fixed_storage: bool) -> None:
    """New random values from ``make_inputs`` copied into the timed inputs' own storage.

    Same pointers, new contents: a call that keys a stored result on the buffers it is given replays a stale
    answer, which the check of the last repetition catches; one that keys it on contents never hits. An entry is
    copied into only when nothing but tensor values changed: one whose shapes, dtypes or other values (a length,
    a flag beside a tensor) changed is replaced whole, so the call never sees new tensors with old lengths."""
    import torch

    from .check import _tensors

    fresh = case.make_inputs(gen)
    with torch.no_grad():
        for name, new in fresh.items():
            if name in inputs and _same_layout(inputs[name], new):
                for o, n in zip(_tensors(inputs[name]), _tensors(new)):
                    o.copy_(n)
            elif fixed_storage:
                raise ValueError(f"make_inputs changed {name!r} between calls beyond its tensors' values (a shape, "
                                 "a dtype or another value); a CUDA-graph case replays what it captured, so only "
                                 "tensor values may change")
            else:
                inputs[name] = new


class TimedCheck:
    """The timed loop's own check: refresh before every rep, poison and copy before the last, judge after."""

    def __init__(self, case, inputs: dict, gen, fixed_storage: bool):
        self.case, self.inputs, self.gen, self.fixed = case, inputs, gen, fixed_storage
        self.pristine: dict | None = None
        self.out = None
        self.refresh_s = 0.0  # host time spent refreshing inputs, outside the timed region

    def call(self):
        self.out = self.case.fn(self.inputs)
        return self.out

    def prepare(self, i: int, n: int) -> None:
        from .check import prepare_checked_call

        t0 = time.perf_counter()
        _refresh_in_place(self.case, self.inputs, self.gen, fixed_storage=self.fixed)
        if i == n - 1:
            self.pristine = prepare_checked_call(self.case, self.inputs)
        self.refresh_s += time.perf_counter() - t0

    def judge(self) -> dict:
        from .check import judge

        if self.pristine is None:
            raise RuntimeError("the timed loop ran no repetition")
        return judge(self.case, self.inputs, self.pristine, self.out)


def _check_metric(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise BadRecord(f"metric {name!r} is {value}: a number must be finite")
    return value


class BadRecord(ValueError):
    """A measured result that cannot go into a record (a non-finite metric); recorded as an error."""


NO_NUMBERS = {"metric": None, "extra_metrics": [], "timing": None, "memory": None}


def run_case(job: dict) -> dict[str, Any]:
    """Execute one job; never raises for a failing case (the failure is the result)."""
    import torch

    from . import extension

    bench = find_bench(job["project"], job["bench"])
    variant = bench.variant(job["variant"])
    dry = job["mode"] == "dry"
    device = torch.device("cpu" if dry else "cuda")
    result: dict[str, Any] = {"status": "error", "message": None, "metric": None, "extra_metrics": [],
                              "timing": None, "work": {}, "correctness": None, "memory": None, "setup": None}
    reason = variant.available() if variant.available else None
    if reason:
        return result | {"status": "skipped", "message": reason}
    extension.take_builds()
    t0 = time.perf_counter()
    try:
        case = bench.case(variant.name, dict(job["params"]), device)
    except Unsupported as e:
        return result | {"status": "skipped", "message": str(e) or "unsupported"}
    finally:
        result["setup"] = {"case_s": round(time.perf_counter() - t0, 3), "builds": extension.take_builds()}
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
    timed = TimedCheck(case, inputs, gen, fixed_storage=t.cuda_graph and not dry and t.method == "events")
    if dry or t.method == "wall":
        from .timing import time_wall

        stats = time_wall(timed.call, warmup_ms=t.warmup_ms, rep_ms=t.rep_ms,
                          min_reps=3 if dry else t.min_reps, max_reps=t.max_reps,
                          warmup_min=1 if dry else t.warmup_min, sync=sync, prepare=timed.prepare)
    else:
        from .timing import time_events

        stats = time_events(timed.call, warmup_ms=t.warmup_ms, rep_ms=t.rep_ms, min_reps=t.min_reps,
                            max_reps=t.max_reps, warmup_min=t.warmup_min, flush_l2=t.flush_l2,
                            cuda_graph=t.cuda_graph, prepare=timed.prepare)
    sync()
    during = timed.judge()
    result["setup"]["refresh_s"] = round(timed.refresh_s, 4)
    timed = inputs = None  # free the timed inputs before the check after timing

    gen.manual_seed(seed + 2)
    after = run_check(case, gen, sync)
    correctness = _merge_checks(before, during, after)
    if not (during["passed"] and after["passed"]):
        which = "on the last timed repetition's own inputs" if not during["passed"] else "after timing"
        return result | NO_NUMBERS | {"status": "failed_correctness", "correctness": correctness,
                                      "message": f"failed the correctness check {which}; no number is kept"}
    median_s = stats.median_ms / 1e3
    m = bench.metric
    result["metric"] = {"name": m.name, "unit": m.unit, "value": _check_metric(m.name, m.value(case.work, median_s)),
                        "higher_is_better": m.higher_is_better}
    if case.extra_metrics is not None:
        result["extra_metrics"] = [
            {"name": k, "unit": v[1], "value": _check_metric(k, v[0]), "higher_is_better": bool(v[2])}
            for k, v in case.extra_metrics(median_s).items()
        ]
    if result["memory"]:
        result["extra_metrics"].append({"name": "peak_extra_mem", "unit": "GiB",
                                        "value": result["memory"]["peak_extra_bytes"] / 2**30,
                                        "higher_is_better": False})
    result["timing"] = stats.as_dict()
    result["correctness"] = correctness
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


def die_with_parent(parent_pid: int) -> None:
    """Exit when the runner dies, even by SIGKILL: a worker left behind would keep holding the GPU.

    Linux delivers SIGKILL on the parent's death (PR_SET_PDEATHSIG); a thread watching the parent's pid covers
    other systems and the moment before the signal was armed."""
    import ctypes
    import signal
    import threading

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(0.5)

    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def serve(conn, log_path: str | None, parent_pid: int | None = None) -> None:
    """Worker main loop: receive a job, send ``{"ok": result}`` or ``{"status": ..., "message": ...}``."""
    if parent_pid is not None:
        die_with_parent(parent_pid)
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
