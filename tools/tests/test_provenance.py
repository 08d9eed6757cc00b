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


def _stale_git_beside_a_newer_tree(root, r, tmp_path):
    """The tree at a second commit with its provenance file, beside a .git that only ever saw the first state
    (what a GPU box that kept an older copy's .git sees): git says dirty at its own commit and cannot resolve
    the file's."""
    stale = git.Repo.init(tmp_path / "stale", initial_branch="main")
    with stale.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (tmp_path / "stale" / "projects" / "gemm_ladder").mkdir(parents=True)
    shutil.copy(root / "projects" / "gemm_ladder" / "kernel.cu", tmp_path / "stale" / "projects" / "gemm_ladder")
    stale.index.add(["projects/gemm_ladder/kernel.cu"])
    first = stale.index.commit("first, as the box's copy saw it").hexsha
    (root / "projects" / "gemm_ladder" / "kernel.cu").write_text("__global__ void faster() {}\n")
    r.index.add(["projects/gemm_ladder/kernel.cu"])
    second = r.index.commit("second").hexsha
    write_provenance_file(root)
    shutil.rmtree(root / ".git")
    shutil.move(str(tmp_path / "stale" / ".git"), str(root / ".git"))
    assert not provenance._knows_commit(root, second)
    return first, second


def test_provenance_file_wins_over_a_stale_git_when_the_sources_match(repo, tmp_path):
    root, r = repo
    first, second = _stale_git_beside_a_newer_tree(root, r, tmp_path)
    assert provenance._from_git(root)["sha"] == first and provenance._from_git(root)["dirty"]
    info = git_info(root)
    assert info["source"] == "provenance_file" and info["sha"] == second and info["dirty"] is False


def test_a_provenance_file_that_no_longer_matches_the_tree_loses_to_git(repo, tmp_path):
    root, r = repo
    first, _ = _stale_git_beside_a_newer_tree(root, r, tmp_path)
    (root / "projects" / "gemm_ladder" / "kernel.cu").write_text("__global__ void edited_after() {}\n")
    info = git_info(root)
    assert info["source"] == "git" and info["sha"] == first and info["dirty"] is True


def test_a_live_checkout_with_uncommitted_edits_is_dirty_whatever_an_old_provenance_file_says(repo):
    root, r = repo
    write_provenance_file(root)  # the project's sources stay as the file recorded them
    (root / "README.md").write_text("prose\n")
    r.index.add(["README.md"])
    head = r.index.commit("docs").hexsha
    (root / "README.md").write_text("an uncommitted edit, outside every project's digest\n")
    info = git_info(root)
    assert info["source"] == "git" and info["sha"] == head and info["dirty"] is True


def test_a_clean_git_at_another_commit_wins_over_an_old_provenance_file(repo):
    root, r = repo
    write_provenance_file(root)
    (root / "README.md").write_text("prose\n")
    r.index.add(["README.md"])
    head = r.index.commit("docs").hexsha
    info = git_info(root)
    assert info["source"] == "git" and info["sha"] == head and info["dirty"] is False


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


def _write(root, files: dict[str, str]):
    for rel, text in files.items():
        path = root / "projects" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _commit(r, message="next"):
    r.git.add("-A")
    r.index.commit(message)


# A project whose bench reaches its product the ways real benches do: an import inside a function, a relative
# import, a module named as a string for importlib, a launch-config file beside the kernels; beside them a lab
# script, a tuning script the bench never imports, a dead module and a shell runner.
PRODUCT = {
    "gemm_ladder/__init__.py": "",
    "gemm_ladder/bench.py": "def case():\n    from .ops import gemm\n    return gemm\n",
    "gemm_ladder/ops.py": "import importlib\nfrom gpufolio_projects.gemm_ladder import kernels\n"
                          "OTHER = importlib.import_module('gpufolio_projects.flash_attention.attention')\n",
    "gemm_ladder/kernels.py": "CONFIGS = 'configs.json'\n",
    "gemm_ladder/configs.json": '{"block": 128}\n',
    "gemm_ladder/tune.py": "from .ops import gemm  # a tuning script: nothing the bench imports reaches it\n",
    "gemm_ladder/dead.py": "X = 1\n",
    "gemm_ladder/gpu.sh": "python -m gpufolio bench\n",
    "gemm_ladder/lab/sweep.py": "from ..ops import gemm\n",
    "gemm_ladder/lab/sweep.cu": "__global__ void sweep() {}\n",
    "gemm_ladder/tests/test_ops.py": "def test(): pass\n",
    "flash_attention/__init__.py": "",
    "flash_attention/attention.py": "from .kernels import fwd\n",
    "flash_attention/kernels/__init__.py": "",
    "flash_attention/kernels/fwd.py": "# the forward kernel\n",
    "flash_attention/bench.py": "from .attention import fwd\n",
    "flash_attention/tune.py": "# its own tuning\n",
}


@pytest.fixture
def product(repo):
    root, r = repo
    _write(root, PRODUCT)
    _commit(r, "product")
    return root, r


def _files(project, root):
    return {p.relative_to(root / "projects").as_posix() for p in provenance.source_files(project, root)}


def test_the_digest_counts_what_the_bench_reaches(product):
    """Product code the bench imports (and its packages), native sources and configs; no lab, tests, runners,
    tuning scripts or dead modules; a dependency only for the modules imported from it."""
    root, _ = product
    assert _files("gemm_ladder", root) == {
        "gemm_ladder/__init__.py", "gemm_ladder/bench.py", "gemm_ladder/ops.py", "gemm_ladder/kernels.py",
        "gemm_ladder/configs.json", "gemm_ladder/kernel.cu",
        "flash_attention/__init__.py", "flash_attention/attention.py", "flash_attention/kernels/__init__.py",
        "flash_attention/kernels/fwd.py"}
    assert "flash_attention/tune.py" not in _files("flash_attention", root)


def test_a_project_py_names_more_entry_points(product):
    root, r = product
    _write(root, {"gemm_ladder/notes/a/repro/bench.py": "from . import port\n",
                  "gemm_ladder/notes/a/repro/port.py": "", "gemm_ladder/notes/a/repro/__init__.py": "",
                  "gemm_ladder/project.py": 'ENTRY_POINTS = ("bench.py", "notes/*/repro/bench.py")\n'})
    assert {"gemm_ladder/notes/a/repro/port.py", "gemm_ladder/notes/a/repro/bench.py"} <= _files("gemm_ladder", root)
    assert "gemm_ladder/project.py" not in _files("gemm_ladder", root)


def _record_git(root, r, digest=None):
    return {"sha": r.head.commit.hexsha, "dirty": False,
            "source_digest": digest or source_digest("gemm_ladder", root)}


@pytest.mark.parametrize("commit", [False, True], ids=["working_tree", "committed"])
@pytest.mark.parametrize("change, stale", [
    ({"gemm_ladder/configs.json": '{"block": 256}\n'}, True),  # a launch config changes the speed
    ({"gemm_ladder/kernel.cu": "__global__ void faster() {}\n"}, True),
    ({"flash_attention/kernels/fwd.py": "# a faster forward\n"}, True),  # a module imported from another project
    ({"gemm_ladder/lab/sweep.py": "from ..ops import gemm  # another sweep\n"}, False),
    ({"gemm_ladder/lab/probe.cu": "__global__ void probe() {}\n"}, False),
    ({"gemm_ladder/tune.py": "# retuned\n", "gemm_ladder/gpu.sh": "exit 0\n"}, False),
    ({"gemm_ladder/tests/test_ops.py": "def test_more(): pass\n"}, False),
    ({"gemm_ladder/README.md": "prose\n"}, False),
    ({"flash_attention/tune.py": "# retuned\n"}, False),  # not imported by gemm_ladder
], ids=["config", "kernel", "dependency", "lab_script", "lab_kernel", "tune_and_runner", "test", "prose",
        "dependency_tune"])
def test_stale_only_when_what_counts_changed(product, change, stale, commit):
    root, r = product
    rec = _record_git(root, r)
    _write(root, change)
    if commit:
        _commit(r)
    assert (source_digest("gemm_ladder", root) != rec["source_digest"]) is stale
    assert provenance.StaleCheck(root)("gemm_ladder", rec) is stale


def test_a_pure_move_or_rename_keeps_records_fresh(product):
    root, r = product
    rec = _record_git(root, r)
    base = root / "projects" / "gemm_ladder"
    (base / "kernels").mkdir()
    r.git.mv("projects/gemm_ladder/kernel.cu", "projects/gemm_ladder/kernels/01_kernel.cu")
    assert source_digest("gemm_ladder", root) == rec["source_digest"]
    _commit(r)
    assert not provenance.StaleCheck(root)("gemm_ladder", rec)


def test_deleting_a_dead_module_or_moving_a_script_into_lab_keeps_records_fresh(product):
    root, r = product
    rec = _record_git(root, r)
    r.git.rm("projects/gemm_ladder/dead.py")
    r.git.mv("projects/gemm_ladder/tune.py", "projects/gemm_ladder/lab/tune.py")
    _commit(r)
    assert source_digest("gemm_ladder", root) == rec["source_digest"]
    assert not provenance.StaleCheck(root)("gemm_ladder", rec)


def test_a_changed_digest_rule_alone_does_not_make_a_run_stale(product):
    """A record whose digest was computed by another rule: today's rule applied to its commit gives today's
    digest, so it stays fresh; with an unknown commit or a dirty tree the digest decides."""
    root, r = product
    rec = _record_git(root, r, digest="0123456789abcdef")
    (root / "projects" / "gemm_ladder" / "README.md").write_text("prose\n")  # not a source
    check = provenance.StaleCheck(root)
    assert not check("gemm_ladder", rec)
    assert check("gemm_ladder", dict(rec, sha="f" * 40))  # a commit this repository does not have
    assert check("gemm_ladder", dict(rec, dirty=True))
    assert not check("gemm_ladder", dict(rec, source_digest=None))  # nothing recorded: unknown, not stale
    (root / "projects" / "gemm_ladder" / "configs.json").write_text("{}\n")
    assert provenance.StaleCheck(root)("gemm_ladder", rec)


def test_without_git_the_digest_decides(product):
    root, r = product
    digest = source_digest("gemm_ladder", root)
    rec = _record_git(root, r, digest="0123456789abcdef")
    shutil.rmtree(root / ".git")
    assert source_digest("gemm_ladder", root) == digest  # the walk finds what git listed
    assert provenance.StaleCheck(root)("gemm_ladder", rec)
    assert not provenance.StaleCheck(root)("gemm_ladder", dict(rec, source_digest=digest))
