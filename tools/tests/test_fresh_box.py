"""A fresh machine: in a virtualenv holding only nox, ``nox -s bench`` installs the project and its torch itself,
prints what the machine has, and a dry run writes its records where --out says (never into projects/*/results/).
Then ``--compare-to latest`` prints the comparison with that first run. CPU only: torch 2.13 from local disk."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def tree_copy(dest: Path) -> None:
    """The tree as a fresh clone holds it: tracked files and new ones git does not ignore (no .nox, no .whl)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.split(b"\0")
    for name in filter(None, map(os.fsdecode, listed)):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def results_files(tree: Path) -> set[str]:
    return {str(p.relative_to(tree)) for p in tree.glob("projects/*/results/*")}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="copies a git checkout")
def test_bench_session_from_a_virtualenv_holding_only_nox(tmp_path):
    tree, venv, out = tmp_path / "tree", tmp_path / "venv", tmp_path / "records"
    tree_copy(tree)
    before = results_files(tree)
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "TRITON_INTERPRET") and not k.startswith("GPUFOLIO_")}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "nox"], check=True, env=env)
    nox = [str(venv / "bin" / "nox"), "-s", "bench", "--"]

    first = subprocess.run([*nox, "--project", "fused_kernels", "--dry-run", "--out", str(out), "--no-progress"],
                           cwd=tree, env=env, capture_output=True, text=True, timeout=1500)
    log = first.stdout + first.stderr
    assert first.returncode == 0, log[-4000:]
    for line in ("GPU:", "torch:", "triton:", "nvcc:", "provenance:"):
        assert line in first.stdout, log[-4000:]
    records = [json.loads(line) for f in (out / "fused_kernels").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert records and {r["status"] for r in records} <= {"dry_run", "skipped"}
    assert any(r["status"] == "dry_run" for r in records) and all(r["env"]["gpu"] is None for r in records)
    assert results_files(tree) == before  # nothing written into the store

    second = subprocess.run([*nox, "--project", "fused_kernels", "--bench", "copy", "--dry-run", "--out", str(out),
                             "--no-progress", "--compare-to", "latest"], cwd=tree, env=env, capture_output=True,
                            text=True, timeout=900)
    assert second.returncode == 0, (second.stdout + second.stderr)[-4000:]
    assert f"A: run {records[0]['run_id']}" in second.stdout and "rule: faster / slower" in second.stdout
