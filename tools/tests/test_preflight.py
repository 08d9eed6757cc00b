"""preflight: what a GPU box has, the one-line refusals, and gemm_ladder left out (with the reason) without nvcc."""
import os

import gpufolio.__main__ as cli
import pytest
from gpufolio import preflight as P

BOX = P.Found(gpu="NVIDIA H200 x1 (sm_90)", driver="580.159.04", torch="2.11.0+cu130", torch_cuda="13.0",
              cuda_available=True, triton="3.6.0", nvcc="/usr/local/cuda/bin/nvcc", nvcc_version="13.0",
              provenance="86ce2cd80cb5 (clean, from provenance_file)")


def box(**changes):
    return P.Found(**{**BOX.__dict__, **changes})


@pytest.mark.parametrize("found, dry, expected", [
    (BOX, False, None),
    (box(torch=None, torch_cuda=None), False, "torch is not installed"),
    (box(torch="2.13.0+cpu", torch_cuda=None, cuda_available=False), False, "is a CPU build"),
    (box(torch="2.13.0+cpu", torch_cuda=None, cuda_available=False, gpu=None), True, None),  # dry runs need no GPU
    (box(cuda_available=False), False, "sees no CUDA GPU (nvidia-smi lists NVIDIA H200 x1 (sm_90): check the driver"),
    (box(triton=None), False, "triton is not installed"),
    (box(nvcc=None, nvcc_version=None), False, None),  # nvcc is gemm_ladder's alone
])
def test_missing_prerequisite(found, dry, expected, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    why = P.missing(found, dry)
    assert why == expected if expected is None else expected in why


@pytest.mark.parametrize("visible", ["", "-1", "none", " ,0"])
def test_a_hidden_gpu_is_named(monkeypatch, visible):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert f"CUDA_VISIBLE_DEVICES={visible!r} hides it" in P.missing(box(cuda_available=False), False)


@pytest.mark.parametrize("visible", ["0", "1,0", "GPU-5f8e2b1c"])
def test_a_variable_that_names_a_gpu_is_not_blamed(monkeypatch, visible):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)  # the usual value under a scheduler: the driver is at fault
    why = P.missing(box(cuda_available=False), False)
    assert "hides it" not in why
    assert f"check the driver against torch's CUDA 13.0; CUDA_VISIBLE_DEVICES={visible!r})" in why


def test_report_lines():
    lines = box(nvcc=None, nvcc_version=None).lines()
    assert lines[0] == "GPU:        NVIDIA H200 x1 (sm_90), driver 580.159.04"
    assert lines[1] == "torch:      2.11.0+cu130 (CUDA 13.0)"
    assert lines[3] == "nvcc:       not found"


def test_only_gemm_ladder_needs_nvcc():
    assert P.left_out(BOX, ["gemm_ladder", "fused_kernels"]) == {}
    out = P.left_out(box(nvcc=None), ["gemm_ladder", "fused_kernels"])
    assert list(out) == ["gemm_ladder"] and "nvcc not found" in out["gemm_ladder"]


def test_find_nvcc_follows_cuda_home(tmp_path, monkeypatch):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert P.find_nvcc() == str(nvcc) and P._nvcc_version(str(nvcc)) == "13.0"
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    assert P.find_nvcc() is None


def test_without_projects_replaces_every_project_option():
    args = ["--project", "gemm_ladder", "--quick", "--project=fused_kernels", "--out", "o"]
    assert P.without_projects(args, ["fused_kernels"]) == ["--project", "fused_kernels", "--quick", "--out", "o"]


@pytest.fixture
def ran(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(argv) or 0)
    return calls


def test_bench_without_nvcc_skips_gemm_ladder_and_runs_the_rest(monkeypatch, ran, capsys):
    monkeypatch.setattr(P, "find", lambda: box(nvcc=None, nvcc_version=None))
    assert P.bench(["--project", "gemm_ladder", "--project", "fused_kernels", "--quick"]) == 0
    assert ran == [["bench", "--project", "fused_kernels", "--quick"]]
    assert "gemm_ladder: skipped: nvcc not found" in capsys.readouterr().out
    assert P.bench(["--quick"]) == 0  # every project: all but gemm_ladder
    assert "gemm_ladder" not in ran[-1] and ran[-1].count("--project") == 5


def test_bench_refuses_in_one_line(monkeypatch, ran, capsys):
    monkeypatch.setattr(P, "find", lambda: box(torch="2.13.0+cpu", torch_cuda=None, cuda_available=False))
    assert P.bench(["--project", "fused_kernels", "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpufolio bench: cannot run here: torch 2.13.0+cpu is a CPU build")
    monkeypatch.setattr(P, "find", lambda: box(nvcc=None))
    assert P.bench(["--project", "gemm_ladder"]) == 2
    assert "nothing left to run (gemm_ladder skipped)" in capsys.readouterr().err
    assert ran == []


def test_dry_run_keeps_gemm_ladder_and_passes_the_arguments_as_they_are(monkeypatch, ran):
    monkeypatch.setattr(P, "find", lambda: box(torch="2.13.0+cpu", torch_cuda=None, cuda_available=False,
                                               gpu=None, nvcc=None))
    assert P.bench(["--project", "fused_kernels", "--dry-run", "--out", "o"]) == 0
    assert ran == [["bench", "--project", "fused_kernels", "--dry-run", "--out", "o"]]


def test_gpu_tests_leave_gemm_ladder_out_without_nvcc(monkeypatch, capsys):
    import pytest as pt

    monkeypatch.setattr(P, "find", lambda: box(nvcc=None))
    seen = []
    monkeypatch.setattr(pt, "main", lambda args: seen.append(args) or 0)
    assert P.tests(["-x"]) == 0
    assert seen == [["-m", "gpu", "--ignore=projects/gemm_ladder", "-x"]]
    assert "gemm_ladder: GPU tests skipped" in capsys.readouterr().out


def test_find_on_this_machine_does_not_fail():
    found = P.find()
    assert found.torch and os.linesep.join(found.lines())
