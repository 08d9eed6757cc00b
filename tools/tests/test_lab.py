"""The lab runner: every project's declared stages resolve, and a run keeps to its budget, kills a stage past its
limit with its children, skips what cannot run, packs one archive, and reads provenance from the provenance file
on a tree without .git."""
import importlib.util
import json
import os
import sys
import tarfile
import time
from pathlib import Path

import pytest
from gpufolio import PROJECTS, lab
from gpufolio.store import repo_root

ROOT = repo_root()


@pytest.mark.parametrize("project", PROJECTS)
def test_declared_stages_resolve(project):
    """What a stage runs exists: its module, its test paths, its project for a bench."""
    declared = lab.stages(project, ROOT)
    assert declared, f"{project} declares no lab stages"
    for s in declared:
        argv = list(s.argv)
        if argv[:2] == ["{python}", "-m"] or "-m" in argv:
            mod = argv[argv.index("-m") + 1]
            assert importlib.util.find_spec(mod) is not None, f"{project}/{s.name}: no module {mod}"
            if mod == "pytest":
                paths = [a for a in argv if a.startswith("projects/")]
                assert paths and all((ROOT / a.split("::")[0]).exists() for a in paths), (project, s.name, paths)
            if mod == "gpufolio" and "bench" in argv:
                assert argv[argv.index("--project") + 1] == project
        for tool in s.needs:
            assert tool in ("ncu", "cuobjdump", "nvcc", "compute-sanitizer"), tool


def test_an_ncu_stage_names_its_kernels_launches_and_sections_and_needs_ncu():
    s = lab.ncu("ncu_x", "fwd|bwd", 2, ("SpeedOfLight", "Occupancy"), "{python}", "-m", "m", "--reps", "1",
                limit_s=30, what="ncu on x")
    assert s.argv == ("ncu", "--clock-control", "none", "--kernel-name", "regex:fwd|bwd", "--launch-count", "2",
                      "--section", "SpeedOfLight", "--section", "Occupancy", "{python}", "-m", "m", "--reps", "1")
    assert (s.needs, s.limit_s, s.what, s.default) == (("ncu",), 30, "ncu on x", True)


def _tree(tmp_path: Path, stages_src: str) -> Path:
    root = tmp_path / "tree"
    (root / "projects" / "gemm_ladder").mkdir(parents=True)
    (root / "projects" / "gemm_ladder" / "project.py").write_text(
        "import sys\nfrom gpufolio.lab import Stage\nPY = sys.executable\n" + stages_src)
    return root


@pytest.fixture(autouse=True)
def no_box(monkeypatch):
    monkeypatch.setattr(lab, "box_env", lambda root, env: {"gpu": None})  # no torch import per test


def _read(archive: Path, name: str) -> str:
    with tarfile.open(archive) as tar:
        return tar.extractfile(name).read().decode()


def test_stages_run_in_order_each_logged_one_archive_back(tmp_path):
    root = _tree(tmp_path, """
STAGES = (
    Stage("hello", ("{python}", "-c", "import os; print('hi', os.environ.get('X'), os.environ.get('TRITON_INTERPRET'))"),
          30, env={"X": "{out}"}),
    Stage("fails", ("{python}", "-c", "raise SystemExit(3)"), 30),
    Stage("writes", ("{python}", "-c", "open('{out}/made.txt', 'w').write('x')"), 30, default=False),
)
""")
    os.environ["TRITON_INTERPRET"] = "1"  # the CPU suite's switch never reaches a GPU stage
    jobs = lab.plan(["gemm_ladder", "gemm_ladder:writes"], root)
    assert [s.name for _, s in jobs] == ["hello", "fails", "writes"]
    out = tmp_path / "out"
    assert lab.run(jobs, root, out, budget_s=120, work=tmp_path / "work") is False  # one stage failed
    assert sorted(p.name for p in out.iterdir()) == ["lab.tgz", "steps.txt"]
    archive = out / "lab.tgz"
    assert f"hi {tmp_path / 'work' / 'gemm_ladder'} None" in _read(archive, "gemm_ladder/hello.log")
    steps = _read(archive, "steps.tsv").splitlines()
    assert [line.split("\t")[:4] for line in steps[1:]] == [
        ["gemm_ladder", "hello", "ok", "0"], ["gemm_ladder", "fails", "failed", "3"],
        ["gemm_ladder", "writes", "ok", "0"]]
    assert _read(archive, "gemm_ladder/made.txt") == "x"
    assert "provenance" in json.loads(_read(archive, "env.json"))


def test_a_stage_past_its_limit_is_killed_with_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    root = _tree(tmp_path, f"""
CHILD = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \\
        "open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
STAGES = (Stage("hangs", ("{{python}}", "-c", CHILD), 2),)
""")
    t0 = time.monotonic()
    lab.run(lab.plan(["gemm_ladder"], root), root, tmp_path / "out", budget_s=60, work=tmp_path / "work")
    assert time.monotonic() - t0 < 30
    assert "timeout\t124" in (tmp_path / "out" / "steps.txt").read_text()
    assert not _alive(int(pid_file.read_text()))


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent that does not reap (PID 1 in some containers)."""
    time.sleep(0.5)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_the_budget_and_missing_tools_skip_stages(tmp_path, monkeypatch):
    root = _tree(tmp_path, """
STAGES = (
    Stage("slow", ("{python}", "-c", "import time; time.sleep(30)"), 100),
    Stage("profile", ("no-such-profiler", "--x"), 10, needs=("no-such-profiler",)),
    Stage("later", ("{python}", "-c", "print(1)"), 10),
)
""")
    monkeypatch.setattr(lab, "PACK_MARGIN_S", 1.0)
    monkeypatch.setattr(lab, "MIN_STAGE_S", 2.0)
    # 5 s in all: "slow" gets 4 (its cap is 100) and is killed; nothing is left for "later"
    lab.run(lab.plan(["gemm_ladder"], root), root, tmp_path / "out", budget_s=5, work=tmp_path / "work")
    rows = [line.split("\t") for line in (tmp_path / "out" / "steps.txt").read_text().splitlines()[1:]]
    assert rows[0][2] == "timeout" and float(rows[0][5]) <= 4
    assert rows[1][2] == "skipped: no no-such-profiler"
    assert rows[2][2].startswith("skipped:") and "s left" in rows[2][2]


def test_provenance_from_the_file_on_a_tree_without_git(tmp_path):
    root = _tree(tmp_path, "STAGES = (Stage('noop', ('{python}', '-c', 'pass'), 10),)\n")
    (root / ".gpufolio").mkdir()
    (root / ".gpufolio" / "provenance.json").write_text(json.dumps({"sha": "a" * 40, "dirty": False}))
    lab.run(lab.plan(["gemm_ladder"], root), root, tmp_path / "out", budget_s=60, work=tmp_path / "work")
    prov = json.loads(_read(tmp_path / "out" / "lab.tgz", "env.json"))["provenance"]
    assert prov["source"] == "provenance_file" and prov["sha"] == "a" * 40


def test_cli_refusals_are_one_line_exit_2(capsys):
    assert lab.main(["nope"]) == 2
    assert "unknown project 'nope'" in capsys.readouterr().err
    assert lab.main(["gemm_ladder:no_stage", "--out", "x"]) == 2
    assert "has no lab stage 'no_stage'" in capsys.readouterr().err
    assert lab.main(["gemm_ladder"]) == 2
    assert "--out is required" in capsys.readouterr().err
    assert lab.main([]) == 2


def test_python_m_gpufolio_lab_lists_stages():
    import subprocess

    res = subprocess.run([sys.executable, "-m", "gpufolio", "lab", "--list"], capture_output=True, text=True,
                         check=True)
    assert "gemm_ladder:" in res.stdout and "[x] bench_sgemm" in res.stdout
