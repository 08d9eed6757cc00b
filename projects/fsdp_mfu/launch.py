"""torchrun, started with the environment every multi-GPU launch of this project needs.

    # one node, 8 GPUs (a standalone rendezvous on a free local port)
    python -m gpufolio_projects.fsdp_mfu.launch --nproc-per-node 8 -- gpufolio_projects.fsdp_mfu.train --mode fsdp2
    # one agent per node, meeting at the first node's c10d store
    python -m gpufolio_projects.fsdp_mfu.launch --nnodes 2 --nproc-per-node 8 --rdzv-endpoint "$HEAD:29500" \\
        --rdzv-id run1 -- gpufolio_projects.fsdp_mfu.train --mode fsdp2

NVLink multicast (NVLS) stays off on every launch: NCCL's NVLS algorithms, torch's symmetric-memory multicast and
NVSHMEM's all need a multicast object the GPU boxes this project runs on do not grant, and a collective that
picks one hangs or fails at init. The variables go into the environment torchrun passes to its ranks, so a
rank cannot start without them, whoever built the command line. TRITON_INTERPRET is dropped: the ranks run
PyTorch ops, and an inherited interpreter flag (the CPU tests set it for other projects' kernels) made gloo
ranks abort in teardown.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

MULTICAST_OFF: dict[str, str] = {
    "NCCL_NVLS_ENABLE": "0",  # NCCL: no NVLink SHARP (multicast) algorithms
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",  # torch symmetric memory: no multicast object
    "NVSHMEM_DISABLE_NVLS": "1",  # NVSHMEM (symmetric memory's backend): no NVLS
}
NOT_INHERITED = ("TRITON_INTERPRET",)


def rank_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for torchrun and its ranks: ``base`` (default: this process's) with multicast off."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in NOT_INHERITED}
    env.update(MULTICAST_OFF)
    return env


def torchrun_argv(nproc_per_node: int, module: str, args: Sequence[str] = (), *, nnodes: int = 1,
                  rdzv_endpoint: str | None = None, rdzv_id: str = "fsdp_mfu", python: str = sys.executable) -> list[str]:
    """torchrun's command line: standalone on one node, or a c10d rendezvous at ``rdzv_endpoint`` (host:port)."""
    if nproc_per_node <= 0 or nnodes <= 0:
        raise ValueError(f"nproc_per_node and nnodes must be positive, got {nproc_per_node} and {nnodes}")
    if rdzv_endpoint is None and nnodes != 1:
        raise ValueError(f"{nnodes} nodes need a rendezvous endpoint (host:port of the first node)")
    argv = [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}"]
    if rdzv_endpoint is None:
        argv.append("--standalone")
    else:
        argv += [f"--nnodes={nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}",
                 f"--rdzv-id={rdzv_id}"]
    return [*argv, "-m", module, *args]


def start(argv: Sequence[str], **popen_kwargs) -> subprocess.Popen:
    """Start a command built by ``torchrun_argv`` with ``rank_env``. The caller owns the process."""
    return subprocess.Popen(list(argv), env=rank_env(popen_kwargs.pop("env", None)), **popen_kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                usage="%(prog)s [options] -- MODULE [ARGS...]")
    p.add_argument("--nproc-per-node", type=int, required=True)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--rdzv-endpoint", default=None, help="host:port of the c10d store (the first node)")
    p.add_argument("--rdzv-id", default="fsdp_mfu")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- MODULE [ARGS...]: what every rank runs")
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("name the module the ranks run, after --")
    try:
        cmd = torchrun_argv(a.nproc_per_node, command[0], command[1:], nnodes=a.nnodes,
                            rdzv_endpoint=a.rdzv_endpoint, rdzv_id=a.rdzv_id)
    except ValueError as e:
        p.error(str(e))
    return start(cmd).wait()


if __name__ == "__main__":
    sys.exit(main())
