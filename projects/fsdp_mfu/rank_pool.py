"""N training ranks driven from one process: how a harness case measures a multi-GPU step.

The harness times, checks and stamps inside its worker, one process. A multi-GPU point needs N processes in one
NCCL group, so the case starts them (torchrun, through launch.py: multicast off in their environment) and
drives them as a controller: ``call(op, ...)`` hands every rank the same command over a TCPStore this process
hosts and returns when every rank has replied (rank_main.py is the other side). The worker's timed call is one
``call("step")``: it returns when the slowest rank has finished its step, so the harness's wall time is the
step time of the group, plus one store round trip (well under a millisecond against steps of hundreds).

One pool per process, reused by consecutive cases at the same world size (the harness runs every variant of a
config back to back): starting torchrun and N CUDA contexts costs seconds per case. A case at another size,
a failed command or the end of the process closes it.
"""
from __future__ import annotations

import atexit
import json
import os
import time
from datetime import timedelta

from . import launch

START_TIMEOUT_S = 300.0  # torchrun start, N imports of torch, process-group init, the first build's compile
POLL_S = 0.0005  # how often the controller looks for the ranks' replies (adds at most this to a timed step)
LOOK_S = 1.0  # how often a long wait looks for a failed rank or a dead torchrun


class RankError(RuntimeError):
    """A rank failed a command, or the ranks' torchrun exited."""


class RankPool:
    def __init__(self, nproc: int, device_type: str):
        import torch.distributed as dist

        self.nproc, self.device_type = nproc, device_type
        self.store = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=START_TIMEOUT_S),
                                   wait_for_workers=False)
        args = ["--control", f"127.0.0.1:{self.store.port}", "--controller-pid", str(os.getpid()),
                "--device", device_type]
        # the ranks inherit this process's stdout and stderr (in the harness worker: its log)
        self.proc = launch.start(launch.torchrun_argv(nproc, "gpufolio_projects.fsdp_mfu.rank_main", args))
        self.k = 0  # the next command's number
        self.broken = False
        self._check_environment()

    def _check_environment(self) -> None:
        """Refuse ranks that could pick an NVLink multicast algorithm (launch.py says why)."""
        for rank, env in enumerate(self.call("environment", names=sorted(launch.MULTICAST_OFF))):
            wrong = {k: v for k, v in env.items() if v != launch.MULTICAST_OFF[k]}
            if wrong:
                self._fail(f"rank {rank} started with NVLink multicast settings {wrong}, not {launch.MULTICAST_OFF}")

    @property
    def alive(self) -> bool:
        return not self.broken and self.proc.poll() is None

    def call(self, op: str, timeout_s: float = START_TIMEOUT_S, **kwargs) -> list:
        """Run ``op`` on every rank; the replies in rank order. RankError if a rank fails or torchrun exits."""
        if not self.alive:
            raise RankError(f"the rank pool is closed (torchrun exit code {self.proc.poll()})")
        self.store.set(f"cmd/{self.k}", json.dumps({"op": op, **kwargs}))
        keys = [f"done/{self.k}/{r}" for r in range(self.nproc)]
        self.k += 1
        start = time.monotonic()
        last_look = start
        # A non-blocking check every POLL_S: a store round trip is ~0.1 ms, and the poll adds at most POLL_S to
        # a timed step (TCPStore.wait with a timeout would do the same, but logs a warning on every expiry).
        while not self.store.check(keys):
            time.sleep(POLL_S)
            now = time.monotonic()
            if now - last_look > LOOK_S:  # rarely: a failed rank or a dead torchrun, which would never reply
                self._raise_if_failed(op, keys)
                last_look = now
            if now - start > timeout_s:
                self._fail(f"{op}: no reply from every rank after {timeout_s:.0f} s")
        replies = [json.loads(self.store.get(k)) for k in keys]
        errors = [r["error"] for r in replies if "error" in r]
        if errors:
            self._fail(errors[0])
        return [r["ok"] for r in replies]

    def _raise_if_failed(self, op: str, keys: list[str]) -> None:
        for key in keys:
            if self.store.check([key]):
                reply = json.loads(self.store.get(key))
                if "error" in reply:
                    self._fail(reply["error"])
        if self.proc.poll() is not None:
            self._fail(f"{op}: the ranks' torchrun exited with code {self.proc.returncode}")

    def _fail(self, message: str) -> None:
        self.close(orderly=False)
        raise RankError(message)

    def close(self, orderly: bool = True) -> None:
        if orderly and self.alive:
            try:
                self.call("stop", timeout_s=30)
                self.proc.wait(timeout=30)
            except Exception:  # noqa: BLE001 - closing: whatever failed, the kill below ends it
                pass
        self.broken = True
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


_POOL: RankPool | None = None  # this process's pool (module docstring: reused across cases)


def pool(nproc: int, device_type: str) -> RankPool:
    """The process's pool of ``nproc`` ranks on ``device_type``, started if it is not running."""
    global _POOL
    if _POOL is not None and (not _POOL.alive or (_POOL.nproc, _POOL.device_type) != (nproc, device_type)):
        close()
    if _POOL is None:
        _POOL = RankPool(nproc, device_type)
    return _POOL


@atexit.register
def close() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.close()
        _POOL = None
