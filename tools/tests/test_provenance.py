"""Stamping provenance from temporary repositories: clean, dirty, detached HEAD, and no .git at all."""
import json
import shutil

import pytest

git = pytest.importorskip("git")  # gitpython; the offline GPU box has none

from gpufolio import provenance  # noqa: E402
from gpufolio.provenance import git_info, source_digest, write_provenance_file  # noqa: E402


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "checkout"
    (root / "projects" / "gemm_ladder" / "results").mkdir(parents=True)
    (root / "projects" / "gemm_ladder" / "kernel.cu").write_text("__global__ void k() {}\n")
    (root / "projects" / "gemm_ladder" / "results" / "r.jsonl").write_text("{}\n")
    r = git.Repo.init(root, initial_branch="main")
    with r.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    r.index.add(["projects/gemm_ladder/kernel.cu"])
    r.index.commit("first")
    return root, r


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    for k in ("GPUFOLIO_GIT_SHA", "GPUFOLIO_GIT_DIRTY", "GPUFOLIO_GIT_BRANCH"):
        monkeypatch.delenv(k, raising=False)


def test_clean_checkout(repo):
    root, r = repo
    info = git_info(root)
    assert info == {"sha": r.head.commit.hexsha, "branch": "main", "dirty": False, "diff_digest": None,
                    "source": "git"}


def test_dirty_checkout_has_a_diff_digest(repo):
    root, _ = repo
    (root / "projects" / "gemm_ladder" / "kernel.cu").write_text("__global__ void k2() {}\n")
    info = git_info(root)
    assert info["dirty"] is True and len(info["diff_digest"]) == 16


def test_detached_head(repo):
    root, r = repo
    r.git.checkout(r.head.commit.hexsha)
    info = git_info(root)
    assert info["branch"] is None and info["sha"] == r.head.commit.hexsha


def test_no_git_and_no_variables_stays_unknown(repo, tmp_path):
    root, _ = repo
    shutil.rmtree(root / ".git")
    assert git_info(root) == {"sha": None, "branch": None, "dirty": None, "diff_digest": None, "source": "unknown"}


def test_no_git_with_variables(repo, monkeypatch):
    root, _ = repo
    shutil.rmtree(root / ".git")
    monkeypatch.setenv("GPUFOLIO_GIT_SHA", "a" * 40)
    monkeypatch.setenv("GPUFOLIO_GIT_DIRTY", "0")
    info = git_info(root)
    assert info["sha"] == "a" * 40 and info["dirty"] is False and info["source"] == "env"
    monkeypatch.setenv("GPUFOLIO_GIT_SHA", "abc123")
    with pytest.raises(ValueError, match="40-hex"):
        git_info(root)


def test_provenance_file_travels_without_git(repo):
    root, r = repo
    sha = r.head.commit.hexsha
    path = write_provenance_file(root)
    data = json.loads(path.read_text())
    assert data["sha"] == sha and data["dirty"] is False
    assert data["source_digests"]["gemm_ladder"] == source_digest("gemm_ladder", root)
    shutil.rmtree(root / ".git")
    info = git_info(root)
    assert info["source"] == "provenance_file" and info["sha"] == sha


def test_provenance_file_needs_a_checkout(tmp_path):
    with pytest.raises(RuntimeError, match="not a git checkout"):
        write_provenance_file(tmp_path)


def test_source_digest_follows_sources_not_results(repo):
    root, _ = repo
    before = source_digest("gemm_ladder", root)
    (root / "projects" / "gemm_ladder" / "results" / "r.jsonl").write_text('{"more": 1}\n')
    (root / "projects" / "gemm_ladder" / "README.md").write_text("prose\n")
    assert source_digest("gemm_ladder", root) == before
    (root / "projects" / "gemm_ladder" / "kernel.cu").write_text("__global__ void faster() {}\n")
    assert source_digest("gemm_ladder", root) != before
    with pytest.raises(KeyError):
        provenance.source_files("nope", root)


def test_a_dependency_counts_only_the_paths_imported_from_it():
    dep = "projects/flash_attention/"
    assert provenance.is_source_path("inference_engine", "projects/inference_engine/engine.py")
    assert provenance.is_source_path("inference_engine", dep + "attention.py")
    assert provenance.is_source_path("inference_engine", dep + "kernels/fwd.py")
    assert not provenance.is_source_path("inference_engine", dep + "bench.py")  # its own bench, not imported
    assert not provenance.is_source_path("inference_engine", "projects/inference_engine/tests/test_x.py")
    assert not provenance.is_source_path("inference_engine", "projects/inference_engine/README.md")
    assert not provenance.is_source_path("gemm_ladder", dep + "attention.py")


def _record_git(root, r, digest=None):
    return {"sha": r.head.commit.hexsha, "dirty": False,
            "source_digest": digest or source_digest("gemm_ladder", root)}


def test_stale_when_a_source_changed_since_the_run(repo):
    root, r = repo
    rec = _record_git(root, r)
    check = provenance.StaleCheck(root)
    assert not check("gemm_ladder", rec)
    (root / "projects" / "gemm_ladder" / "kernel.cu").write_text("__global__ void faster() {}\n")
    assert provenance.StaleCheck(root)("gemm_ladder", rec)


def test_a_changed_digest_rule_alone_does_not_make_a_run_stale(repo):
    """A record whose digest was computed by an older (wider) rule: git shows none of today's source files
    changed since its commit, so it stays fresh; with an unknown commit or a dirty tree the digest decides."""
    root, r = repo
    rec = _record_git(root, r, digest="0123456789abcdef")
    (root / "projects" / "gemm_ladder" / "README.md").write_text("prose\n")  # not a source
    check = provenance.StaleCheck(root)
    assert not check("gemm_ladder", rec)
    assert check("gemm_ladder", dict(rec, sha="f" * 40))  # a commit this repository does not have
    assert check("gemm_ladder", dict(rec, dirty=True))
    assert not check("gemm_ladder", dict(rec, source_digest=None))  # nothing recorded: unknown, not stale


def test_without_git_the_digest_decides(repo):
    root, r = repo
    rec = _record_git(root, r, digest="0123456789abcdef")
    shutil.rmtree(root / ".git")
    assert provenance.StaleCheck(root)("gemm_ladder", rec)
