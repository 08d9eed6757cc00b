"""The CLI: clear one-line errors and non-zero exits for bad input; env and check on a CPU machine."""
import json
import subprocess
import sys

import pytest
from gpufolio.__main__ import main


def test_unknown_project_is_one_clear_line(capsys):
    assert main(["bench", "--project", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown project nope" in err[0]


def test_bad_option_exits_non_zero(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--frobnicate"])
    assert e.value.code == 2


def test_bench_without_gpu_says_so():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run([sys.executable, "-m", "gpufolio", "bench", "--project", "gemm_ladder", "--no-progress",
                           "--out", "/tmp/gpufolio-cli-test"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("gpufolio bench:") and ("no CUDA GPU" in last or "nothing to run" in last)


def test_env_prints_a_cpu_stamp():
    pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, "-m", "gpufolio", "env"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["env"]["python"] and data["env"]["torch"]
    assert "sha" in data["git"]


def test_check_validates_the_committed_store():
    proc = subprocess.run([sys.executable, "-m", "gpufolio", "check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 problems" in proc.stdout


def test_check_reports_a_bad_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": 1}\n')
    proc = subprocess.run([sys.executable, "-m", "gpufolio", "check", str(bad)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and "problem:" in proc.stdout
    missing = subprocess.run([sys.executable, "-m", "gpufolio", "check", str(tmp_path / "none.jsonl")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no such results file" in missing.stderr


def test_the_recorded_command_names_no_scratch_folder():
    from gpufolio.__main__ import recorded_argv
    assert recorded_argv(["bench", "--out", "/tmp/lab-x/p", "--quick"]) == ["bench", "--out", "OUT", "--quick"]
    assert recorded_argv(["bench", "--out=/tmp/y"]) == ["bench", "--out=OUT"]
    assert recorded_argv(["bench", "--quick"]) == ["bench", "--quick"]


def test_where_keeps_only_the_named_configs():
    from gpufolio.runner import Plan

    plan = Plan(["flash_attention"], "full", {"attention_fwd"}, set(), {"S": {"512", "1024"}, "causal": {"TRUE"}})
    jobs = plan.jobs()
    assert jobs and {j["params"]["S"] for j in jobs} == {512, 1024}
    assert all(j["params"]["causal"] is True for j in jobs)
    assert {j["variant"] for j in jobs} == {j["variant"] for j in Plan(["flash_attention"], "full",
                                                                         {"attention_fwd"}).jobs()}


@pytest.mark.parametrize("where, says", [("S", "expected KEY=VALUE"), ("=1", "expected KEY=VALUE"),
                                         ("S=", "expected KEY=VALUE"), ("seqlen=1024", "no selected config")])
def test_a_bad_where_is_one_clear_line(capsys, where, says):
    assert main(["bench", "--project", "flash_attention", "--where", where]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]
