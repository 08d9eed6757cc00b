"""launch.py: every torchrun it builds carries NVLink multicast off into its ranks (and drops TRITON_INTERPRET),
and the multi-node launch of the README and lab/slurm_scaling.sbatch — one agent per node meeting at a c10d
rendezvous — works, here as two agents on 127.0.0.1 with gloo CPU ranks (2 and 4 ranks in all)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from gpufolio_projects.fsdp_mfu import launch
from gpufolio_projects.fsdp_mfu.tests._dist_workers import _free_port

OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def test_rank_env_turns_multicast_off_whatever_the_caller_had():
    env = launch.rank_env({"PATH": "/bin", "NCCL_NVLS_ENABLE": "1", "TRITON_INTERPRET": "1"})
    assert {k: env[k] for k in OFF} == OFF and env["PATH"] == "/bin" and "TRITON_INTERPRET" not in env
    assert launch.MULTICAST_OFF == OFF


def test_torchrun_argv():
    standalone = launch.torchrun_argv(8, "m.train", ["--x", "1"], python="py")
    assert standalone == ["py", "-m", "torch.distributed.run", "--nproc-per-node=8", "--standalone", "-m", "m.train",
                          "--x", "1"]
    multi = launch.torchrun_argv(8, "m.train", nnodes=4, rdzv_endpoint="head:29500", rdzv_id="job7", python="py")
    assert "--nnodes=4" in multi and "--rdzv-backend=c10d" in multi and "--rdzv-endpoint=head:29500" in multi
    assert "--rdzv-id=job7" in multi and "--standalone" not in multi
    with pytest.raises(ValueError, match="rendezvous"):
        launch.torchrun_argv(8, "m", nnodes=2)
    with pytest.raises(ValueError):
        launch.torchrun_argv(0, "m")


def test_cli_refuses_a_missing_module(capsys):
    with pytest.raises(SystemExit) as e:
        launch.main(["--nproc-per-node", "2", "--"])
    assert e.value.code == 2 and "module" in capsys.readouterr().err


@pytest.mark.parametrize("per_node", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_two_agents_meet_at_a_c10d_rendezvous(tmp_path, monkeypatch, per_node):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # what other projects' conftests leave set: must not reach a rank
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # a caller's multicast setting is overridden
    endpoint = f"127.0.0.1:{_free_port()}"
    cmd = [sys.executable, "-m", "gpufolio_projects.fsdp_mfu.launch", "--nnodes", "2", "--nproc-per-node",
           str(per_node), "--rdzv-endpoint", endpoint, "--rdzv-id", "test", "--",
           "gpufolio_projects.fsdp_mfu.tests._launch_probe", str(tmp_path)]
    agents = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    logs = [a.communicate(timeout=240)[0] for a in agents]
    assert [a.returncode for a in agents] == [0, 0], logs
    world = 2 * per_node
    seen = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    for r, s in enumerate(seen):
        assert s["rank"] == r and s["world"] == world and s["sum_of_ranks"] == world * (world - 1) / 2
        assert {k: s["env"][k] for k in OFF} == OFF and s["env"]["TRITON_INTERPRET"] is None
