"""The sweep: every (bench, params, variant) as one job in an isolated worker, one record per job.

Isolation: the worker is a separate process (spawned, so CUDA never starts in this one). A job that hangs is
killed at its timeout; one that aborts the process or corrupts the CUDA context ends its worker. Either way
the job becomes a record (``timeout`` / ``error`` / ``oom``) and the sweep goes on with a fresh worker.
Records are appended with flush+fsync as they come; the run summary is written atomically at the end.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from . import store
from .projects import bench_meta, benches, find_bench
from .provenance import git_info, source_digest

DEFAULT_TIMEOUT_S = 300.0
STARTUP_TIMEOUT_S = 180.0


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


class WorkerHandle:
    """A worker process and its pipe; restarts on demand after a crash or a timeout."""

    def __init__(self, log_path: Path | None, env: dict[str, str] | None = None):
        self.log_path, self.env = log_path, env or {}
        self.proc = None
        self.conn = None

    def start(self) -> None:
        from .worker import serve

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)  # spawn copies os.environ at start: TRITON_INTERPRET for dry runs
        try:
            self.proc = ctx.Process(target=serve, daemon=True,
                                    args=(child, str(self.log_path) if self.log_path else None, os.getpid()))
            self.proc.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        child.close()
        self.conn = parent

    def stop(self) -> None:
        if self.proc is None or self.conn is None:
            self.kill()
            return
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(timeout=10)
        self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=10)
        self.proc = None
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def call(self, job: dict, timeout_s: float) -> dict:
        """Send one job and wait; a dead or silent worker becomes a failure reply, never an exception."""
        if self.proc is None or not self.proc.is_alive():
            self.start()
            # A fresh worker imports torch first; that start-up does not count against the job's timeout.
            ready = self._send_and_wait({"kind": "ping"}, STARTUP_TIMEOUT_S)
            if "ok" not in ready:
                return ready
        return self._send_and_wait(job, timeout_s)

    def _send_and_wait(self, job: dict, timeout_s: float) -> dict:
        try:
            self.conn.send(job)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if self.conn.poll(min(1.0, max(deadline - time.monotonic(), 0.01))):
                    reply = self.conn.recv()
                    if not self.proc.is_alive() or "ok" not in reply and self._fatal_exit():
                        self.kill()
                    return reply
                if not self.proc.is_alive():
                    code = self.proc.exitcode
                    self.kill()
                    return {"status": "error", "message": f"worker process died ({_describe_exit(code)})"}
        except (EOFError, OSError, BrokenPipeError) as e:
            if self.proc is not None:
                self.proc.join(timeout=5)  # let the exit code settle before describing it
            code = self.proc.exitcode if self.proc is not None else None
            self.kill()
            return {"status": "error", "message": f"worker process died ({_describe_exit(code)}; {e!r})"}
        self.kill()
        return {"status": "timeout", "message": f"no result after {timeout_s:.0f} s; the worker was killed"}

    def _fatal_exit(self) -> bool:
        self.proc.join(timeout=2)  # a worker that saw a fatal CUDA error exits right after replying
        return not self.proc.is_alive()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass
class Plan:
    projects: list[str]
    mode: str  # full | quick | dry
    bench_names: set[str] = field(default_factory=set)
    variant_names: set[str] = field(default_factory=set)
    # Only configs whose parameter KEY is one of its values (``--where S=512,1024``): re-measuring some rows of a
    # sweep without running it all. Values compare as text, case-insensitively (``causal=true``).
    where: dict[str, set[str]] = field(default_factory=dict)

    def __post_init__(self):
        self.where = {k: {v.lower() for v in allowed} for k, allowed in self.where.items()}

    def configs(self):
        """(project, bench, params) of the selected benches, before ``where``."""
        for project in self.projects:
            for bench in benches(project):
                if self.bench_names and bench.name not in self.bench_names:
                    continue
                if self.mode == "dry" and not bench.dry_run_supported:
                    continue
                for params in bench.configs(self.mode):
                    yield project, bench, params

    def param_names(self) -> set[str]:
        """Every parameter name of the selected benches' configs (what ``where`` may name)."""
        return {k for _, _, params in self.configs() for k in params}

    def jobs(self) -> list[dict]:
        """Per bench, per config, all variants back to back: baseline and candidates under the same conditions."""
        out = []
        for project, bench, params in self.configs():
            if not all(str(params.get(k)).lower() in allowed for k, allowed in self.where.items()):
                continue
            for v in bench.variants:
                if self.variant_names and v.name not in self.variant_names and v.role != "baseline":
                    continue
                out.append({"kind": "case", "project": project, "bench": bench.name, "variant": v.name,
                            "role": v.role, "params": dict(params), "mode": self.mode})
        return out


def make_record(job: dict, reply: dict, *, run_id: str, env: dict, git: dict, digest: str | None,
                command: str) -> dict:
    result = reply.get("ok")
    if result is None:  # the worker failed around the case: error / oom / timeout / skipped
        result = {"status": reply["status"], "message": reply.get("message"), "metric": None, "extra_metrics": [],
                  "timing": None, "work": {}, "correctness": None, "memory": None}
    bench = find_bench(job["project"], job["bench"])
    return {
        "schema_version": store.SCHEMA_VERSION,
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "project": job["project"], "bench": job["bench"], "variant": job["variant"], "role": job["role"],
        "params": job["params"],
        "metric": result["metric"], "extra_metrics": result.get("extra_metrics") or [],
        "timing": result["timing"], "work": result.get("work") or {}, "memory": result.get("memory"),
        "correctness": result.get("correctness"), "status": result["status"], "message": result.get("message"),
        "setup": result.get("setup"),
        "env": env, "git": dict(git, source_digest=digest), "command": command, "bench_meta": bench_meta(bench),
    }


def _record_or_error(job: dict, reply: dict, path: Path, **stamp) -> dict:
    """Write the job's record; one that cannot be built or is rejected by the schema becomes an ``error``
    record naming the field, so every job leaves a record and the sweep goes on."""
    try:
        rec = make_record(job, reply, **stamp)
        store.append(path, rec)
        return rec
    except (store.RecordError, ValueError, TypeError, KeyError) as e:
        msg = f"the record could not be written: {e}"[:2000]
        print(f"gpufolio: {job['project']}/{job['bench']} {job['variant']}: {msg}", file=sys.stderr)
        rec = make_record(job, {"status": "error", "message": msg}, **stamp)
        store.append(path, rec)
        return rec


@dataclass
class RunResult:
    run_id: str
    records: list[dict]
    paths: list[Path]


def run(plan: Plan, *, out_dir: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, command: str = "",
        progress: bool = True, require_gpu: bool = True) -> RunResult:
    """Run every job of ``plan``; returns the records written. Raises RuntimeError when no GPU is present and
    the mode is not dry (the check happens inside the worker, before any job)."""
    run_id = new_run_id()
    dry = plan.mode == "dry"
    root = store.repo_root()
    log_dir = (out_dir or root / ".gpufolio" / "logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run_id}.log"
    worker = WorkerHandle(log_path, {"TRITON_INTERPRET": "1"} if dry else {})
    git = git_info(root)
    digests = {p: source_digest(p, root) for p in plan.projects}
    jobs = plan.jobs()
    records, paths = [], set()
    try:
        reply = worker.call({"kind": "stamp", "quick": plan.mode != "full", "dry": dry}, max(timeout_s, 300))
        if "ok" not in reply:
            raise RuntimeError(f"could not stamp the environment: {reply.get('message')} (log: {log_path})")
        env = reply["ok"]
        if require_gpu and not dry and env.get("gpu") is None:
            raise RuntimeError("no CUDA GPU found: `bench` measures on a GPU; use --dry-run to exercise the CPU "
                               "paths (records marked dry_run, never shown as numbers)")
        bar = _progress(jobs, progress)
        for i, job in enumerate(bar):
            job = dict(job, seed=1000 + 7 * i)
            label = f"{job['project']}/{job['bench']} {job['variant']} {store.params_key(job['params'])}"
            if hasattr(bar, "set_description_str"):
                bar.set_description_str(label[:70])
            t_job = time.monotonic()
            reply = worker.call(job, timeout_s)
            if isinstance(reply.get("ok"), dict):  # the job's wall time, start-up of a fresh worker included
                reply["ok"]["setup"] = dict(reply["ok"].get("setup") or {}, job_s=round(time.monotonic() - t_job, 3))
            if not dry and env.get("gpu"):
                env = dict(env, gpu=dict(env["gpu"], clocks_end=_clocks(worker, timeout_s)))
            path = (out_dir / job["project"] if out_dir else store.results_dir(job["project"], root)) / f"{run_id}.jsonl"
            rec = _record_or_error(job, reply, path, run_id=run_id, env=env, git=git,
                                   digest=digests[job["project"]], command=command)
            records.append(rec)
            paths.add(path)
    finally:
        worker.stop()
    summary = {"run_id": run_id, "command": command, "mode": plan.mode, "n_records": len(records),
               "by_status": _count(r["status"] for r in records), "git": git, "files": sorted(map(str, paths))}
    store.write_atomic(log_dir / f"{run_id}.summary.json", json.dumps(summary, indent=2) + "\n")
    return RunResult(run_id, records, sorted(paths))


def _clocks(worker: WorkerHandle, timeout_s: float) -> dict | None:
    reply = worker.call({"kind": "stamp", "end": True}, min(timeout_s, 60))
    return (reply.get("ok") or {}).get("clocks_end")


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for it in items:
        out[it] = out.get(it, 0) + 1
    return out


def _progress(jobs: list[dict], enabled: bool):
    if not enabled:
        return jobs
    try:
        from tqdm import tqdm
    except ImportError:
        return jobs
    return tqdm(jobs, unit="case", file=sys.stderr, dynamic_ncols=True)


def summary_table(records: list[dict]) -> str:
    """variant, params, metric, ratio to the bench's headline baseline at the same params (same run)."""
    base: dict[tuple, float] = {}
    for r in records:
        if r["role"] == "baseline" and r["status"] in ("ok", "dry_run") and r["variant"] == r["bench_meta"]["headline_baseline"]:
            base[(r["project"], r["bench"], store.params_key(r["params"]))] = r["metric"]["value"]
    lines = [f"{'bench':<26} {'variant':<24} {'params':<44} {'metric':>18} {'vs base':>8}  status"]
    for r in records:
        key = (r["project"], r["bench"], store.params_key(r["params"]))
        m = r.get("metric") if r["status"] in ("ok", "dry_run") else None  # a failed check has no number
        val = f"{m['value']:.4g} {m['unit']}" if m else "-"
        ratio = ""
        if m and key in base and base[key] and r["status"] in ("ok", "dry_run"):
            q = m["value"] / base[key]
            ratio = f"{(q if m['higher_is_better'] else 1 / q):.2f}x"
        status = r["status"] + (f" ({(r.get('message') or '')[:60]})" if r["status"] not in ("ok", "dry_run") else "")
        lines.append(f"{r['project'][:10] + '/' + r['bench']:<26.26} {r['variant']:<24.24} "
                     f"{store.params_key(r['params']):<44.44} {val:>18} {ratio:>8}  {status}")
    return "\n".join(lines)
