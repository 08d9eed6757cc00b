"""One rank of a multi-process bench case: joins torchrun's process group, then runs what the controller
(``rank_pool.RankPool``, inside the harness's worker) asks, one command at a time, until told to stop.

    (started by RankPool through launch.torchrun_argv, never by hand)
    python -m torch.distributed.run --standalone --nproc-per-node N -m gpufolio_projects.fsdp_mfu.rank_main \\
        --control 127.0.0.1:PORT --controller-pid PID --device cuda

Commands travel over the controller's TCPStore: command k is the JSON at ``cmd/<k>``; every rank runs it and
writes its reply (``{"ok": ...}`` or ``{"error": traceback}``) to ``done/<k>/<rank>``. All ranks run the same
commands in the same order, so the collectives inside a training step meet. A rank whose command failed exits
(its peers may be stuck in a collective: the controller then ends the whole group). A rank also exits when the
controller's process is gone, so a killed harness worker leaves no rank holding a GPU.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import threading
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

from . import distributed as distmod
from .comm_profile import comm_overlap
from .configs import get_config
from .data import BatchSpec, SyntheticBatches
from .trainer import TrainConfig, Trainer

IDLE_TIMEOUT_S = 3600  # a rank waits this long for its next command (the controller's death ends it sooner)


class Rank:
    """This rank's process group, its current trainer and the handlers of the controller's commands."""

    def __init__(self, device_type: str):
        self.info = distmod.init(device_type)
        self.trainer: Trainer | None = None
        self.batch = self.seq = 0

    @property
    def on_cuda(self) -> bool:
        return self.info.device.type == "cuda"

    def sync(self) -> None:
        if self.on_cuda:
            torch.cuda.synchronize(self.info.device)

    def build(self, train_config: dict, model: str, batch_per_rank: int, seq: int) -> dict:
        """A fresh trainer: the previous case's graphs and cached blocks dropped first."""
        self.trainer = None
        torch._dynamo.reset()
        gc.collect()
        if self.on_cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(self.info.device)
        t0 = time.perf_counter()
        self.trainer = Trainer(get_config(model), TrainConfig(**train_config), self.info.device)
        self.batch, self.seq = batch_per_rank, seq
        return {"build_s": time.perf_counter() - t0, "world_size": self.info.world_size,
                "device": torch.cuda.get_device_name(self.info.device) if self.on_cuda else "cpu"}

    def losses(self, steps: int, data_seed: int) -> list[float]:
        """This rank's loss at each of ``steps`` steps on fixed data: the GLOBAL batch of each step drawn first
        and sliced by rank (data.py), so any world size at the same global batch trains on the same tokens."""
        tr = self._trainer()
        spec = BatchSpec(self.batch * self.info.world_size, self.seq, self.info.rank, self.info.world_size)
        data = SyntheticBatches(tr.model_cfg.vocab_size, spec, seed=data_seed)
        return [float(tr.step(*data.batch(s, self.info.device))) for s in range(steps)]

    def step(self, seed: int) -> float:
        """One training step on fresh tokens drawn on the device (no host work in the timed step); the float()
        waits for the step to finish on this rank."""
        tr = self._trainer()
        gen = torch.Generator(device=self.info.device).manual_seed(seed * 1009 + self.info.rank)
        seq = torch.randint(0, tr.model_cfg.vocab_size, (self.batch, self.seq + 1), generator=gen,
                            device=self.info.device)
        return float(tr.step(seq[:, :-1], seq[:, 1:]))

    def environment(self, names: list[str]) -> dict:
        """This rank's values of ``names`` (None: unset): the controller checks that multicast is off."""
        return {n: os.environ.get(n) for n in names}

    def memory(self) -> dict:
        if not self.on_cuda:
            return {}
        props = torch.cuda.get_device_properties(self.info.device)
        return {"peak_gib": torch.cuda.max_memory_allocated(self.info.device) / 2**30,
                "capacity_gib": props.total_memory / 2**30}

    def profile(self, steps: int, seed: int) -> dict:
        """NCCL and compute kernel intervals of ``steps`` steps under torch.profiler -> comm_overlap's ms."""
        if not self.on_cuda:
            return {}
        from torch.profiler import ProfilerActivity, profile

        from .kernel_buckets import is_kernel

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(steps):
                self.step(seed + i)
            self.sync()
        kernels = [(e.key, e.time_range.start, e.time_range.end) for e in prof.events() if is_kernel(e)]
        return comm_overlap(kernels, steps)

    def _trainer(self) -> Trainer:
        if self.trainer is None:
            raise RuntimeError("no trainer: the controller must send 'build' first")
        return self.trainer


def _exit_with_controller(pid: int) -> None:
    def watch() -> None:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(1)
            time.sleep(1.0)

    threading.Thread(target=watch, name="controller-watch", daemon=True).start()


def serve(control: str, device_type: str) -> None:
    host, port = control.rsplit(":", 1)
    store = dist.TCPStore(host, int(port), is_master=False, timeout=timedelta(seconds=IDLE_TIMEOUT_S))
    rank = Rank(device_type)
    handlers = {"build": rank.build, "losses": rank.losses, "step": rank.step, "memory": rank.memory,
                "profile": rank.profile, "environment": rank.environment}
    k = 0
    while True:
        cmd = json.loads(store.get(f"cmd/{k}"))
        op = cmd.pop("op")
        if op == "stop":
            store.set(f"done/{k}/{rank.info.rank}", json.dumps({"ok": None}))
            break
        try:
            reply = {"ok": handlers[op](**cmd)}
        except Exception:  # noqa: BLE001 - the controller reports it; this rank cannot go on
            reply = {"error": f"rank {rank.info.rank}, {op}: {traceback.format_exc()[-3000:]}"}
        store.set(f"done/{k}/{rank.info.rank}", json.dumps(reply))
        if "error" in reply:
            os._exit(1)  # peers may be blocked in a collective this rank left: no orderly teardown
        k += 1
    # every rank past its last command before any tears the group down
    dist.barrier()
    distmod.shutdown()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--control", required=True, help="host:port of the controller's TCPStore")
    p.add_argument("--controller-pid", type=int, required=True)
    p.add_argument("--device", choices=("cuda", "cpu"), required=True)
    a = p.parse_args(argv)
    _exit_with_controller(a.controller_pid)
    if a.device == "cpu":
        torch.set_num_threads(1)  # N ranks share the host's cores
    serve(a.control, a.device)


if __name__ == "__main__":
    main()
