"""`pr-note new`: drafting a note from a branch of a local clone, built here with gitpython."""
from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from gpufolio.prnotes.cli import main
from gpufolio.prnotes.draft import DraftError, draft
from gpufolio.prnotes.notes import read_note, validate_note

ALICE = ("Alice Kernel", "alice@example.com")
BOB = ("Bob Review", "bob@example.com")


def _commit(repo, files: dict[str, str], message: str, who, when: str):
    import git

    for name, text in files.items():
        path = Path(repo.working_tree_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        repo.index.add([name])
    actor = git.Actor(*who)
    return repo.index.commit(message, author=actor, committer=actor, author_date=when, commit_date=when)


@pytest.fixture(scope="module")
def _template(tmp_path_factory):
    """A clone of 'acme/widget': main has two commits, branch 'feat/fast-norm' two more, then main moves on."""
    import git

    repo = git.Repo.init(tmp_path_factory.mktemp("template") / "widget", initial_branch="main")
    repo.create_remote("origin", "https://github.com/acme/widget.git")
    _commit(repo, {"src/norm.py": "".join(f"line {i}\n" for i in range(10)), "README.md": "widget\n"},
            "Initial import", ALICE, "2026-11-01T10:00:00")
    _commit(repo, {"README.md": "widget\nnorms\n"}, "Docs", BOB, "2026-11-02T10:00:00")
    repo.create_head("feat/fast-norm").checkout()
    # norm.py: lines 3 and 4 replaced (2 deletions, 2 insertions) plus 3 lines appended -> +5 -2
    lines = [f"line {i}\n" for i in range(10)]
    lines[3:5] = ["fast 3\n", "fast 4\n"]
    _commit(repo, {"src/norm.py": "".join(lines + ["a\n", "b\n", "c\n"])},
            "Add a multi-row forward kernel for norm", ALICE, "2026-11-10T09:30:00")
    _commit(repo, {"tests/test_norm.py": "def test():\n    pass\n"}, "Test awkward widths", BOB, "2026-11-11T09:30:00")
    repo.heads.main.checkout()
    _commit(repo, {"other.py": "x = 1\n"}, "Unrelated change on main", BOB, "2026-11-12T09:30:00")
    return Path(repo.working_tree_dir)


@pytest.fixture
def clone(_template, tmp_path):
    """A fresh copy of the template clone per test (tests dirty it, retag it, change its remotes)."""
    import git

    return git.Repo(shutil.copytree(_template, tmp_path / "widget"))


def test_draft_reads_commits_and_diffstat_against_merge_base(clone):
    meta, body = draft(clone.working_tree_dir, "feat/fast-norm", base="main", today=dt.date(2026, 12, 2))
    assert meta["status"] == "idea" and meta["slug"] == "fast_norm"
    assert meta["upstream"]["repo"] == "acme/widget"
    assert meta["upstream"]["base_ref"] == clone.commit("main~1").hexsha  # the merge base, not main's tip
    assert meta["title"] == "Add a multi-row forward kernel for norm"
    change = meta["change"]
    assert [(c["summary"], c["author"], c["date"]) for c in change["commits"]] == [
        ("Add a multi-row forward kernel for norm", "Alice Kernel", "2026-11-10"),
        ("Test awkward widths", "Bob Review", "2026-11-11"),
    ]
    # main's later other.py is not part of the branch's change
    assert change["files"] == [{"path": "src/norm.py", "insertions": 5, "deletions": 2},
                               {"path": "tests/test_norm.py", "insertions": 2, "deletions": 0}]
    assert (change["files_changed"], change["insertions"], change["deletions"]) == (2, 7, 2)
    assert meta["dates"]["created"] == "2026-12-02"
    assert "Test awkward widths" in body


def test_cli_writes_a_note_that_check_accepts_once_filled_in(clone, tmp_path, capsys):
    out = tmp_path / "notes"
    rc = main(["new", "--repo", clone.working_tree_dir, "--branch", "feat/fast-norm", "--out", str(out)])
    assert rc == 0
    path = out / "fast_norm" / "note.md"
    assert str(path) in capsys.readouterr().out
    note = read_note(path)
    errors = validate_note(note)
    # only what git cannot know is left to write, and the check says so field by field
    assert sorted(e.split(": ")[1] for e in errors) == ["(body)", "correctness", "hardware"], errors
    text = path.read_text().replace("FILL IN: how the patched output", "The harness compared the patched output")
    text = text.replace("hardware: FILL IN", "hardware: NVIDIA H200").replace("FILL IN: the problem", "The problem")
    path.write_text(text)
    assert validate_note(read_note(path)) == []
    # a second draft for the same branch does not overwrite the first
    assert main(["new", "--repo", clone.working_tree_dir, "--branch", "feat/fast-norm", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_tag_as_base_and_overrides(clone):
    clone.create_tag("v1.0", ref="main~1")
    meta, _ = draft(clone.working_tree_dir, "feat/fast-norm", base="v1.0", upstream="acme/widget-fork", slug="my_note")
    assert meta["slug"] == "my_note" and meta["upstream"]["repo"] == "acme/widget-fork"
    assert meta["change"]["files_changed"] == 2


def _cli_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("pr-note new: error: ")
    return err


def test_missing_repo(tmp_path, capsys):
    err = _cli_error(capsys, ["new", "--repo", str(tmp_path / "nope"), "--branch", "b", "--out", str(tmp_path)])
    assert "no such directory" in err


def test_not_a_git_repo(tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    err = _cli_error(capsys, ["new", "--repo", str(tmp_path / "plain"), "--branch", "b", "--out", str(tmp_path)])
    assert "not a git repository" in err


def test_unknown_branch_names_the_known_ones(clone, tmp_path, capsys):
    err = _cli_error(capsys, ["new", "--repo", clone.working_tree_dir, "--branch", "feat/slow", "--out", str(tmp_path)])
    assert "unknown branch 'feat/slow'" in err and "feat/fast-norm" in err and "main" in err


def test_unknown_base(clone, tmp_path, capsys):
    err = _cli_error(capsys, ["new", "--repo", clone.working_tree_dir, "--branch", "feat/fast-norm",
                              "--base", "develop", "--out", str(tmp_path)])
    assert "unknown base 'develop'" in err


@pytest.mark.parametrize("how", ["modified", "staged", "untracked"])
def test_dirty_tree(clone, tmp_path, capsys, how):
    root = Path(clone.working_tree_dir)
    if how == "untracked":
        (root / "scratch.txt").write_text("x\n")
    else:
        (root / "README.md").write_text("changed\n")
        if how == "staged":
            clone.index.add(["README.md"])
    err = _cli_error(capsys, ["new", "--repo", str(root), "--branch", "feat/fast-norm", "--out", str(tmp_path)])
    assert "dirty" in err and ("scratch.txt" if how == "untracked" else "README.md") in err


def test_branch_without_commits_of_its_own(clone):
    clone.create_head("empty", "main")
    with pytest.raises(DraftError, match="no commits beyond its merge base"):
        draft(clone.working_tree_dir, "empty")


def test_no_github_remote(clone):
    clone.delete_remote("origin")
    clone.create_remote("origin", "/srv/git/widget.git")
    with pytest.raises(DraftError, match="--upstream OWNER/NAME"):
        draft(clone.working_tree_dir, "feat/fast-norm")
