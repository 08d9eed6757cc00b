"""Correct the ``git`` block of records stamped from a stale ``.git`` on a GPU box, when it can be proven.

A box that kept an older copy's ``.git`` stamps a new copy of the tree as "dirty at the old commit", with the
digest of ``git diff HEAD`` there, although the copy came from a clean commit named in its provenance file
(``gpufolio.provenance`` now prefers that file in this case). For records made before that fix:

    python tools/lab/restamp_git.py COMMIT projects/<p>/results/<run_id>.jsonl ...

For each file it rebuilds what the box saw (a worktree at the stamped commit, its tracked files replaced by
COMMIT's), takes the digest the way the stamp does, and rewrites the block only if that digest and each
record's source digest both match COMMIT's; the original block is kept as ``git_as_stamped``. Anything else
is left alone and reported (exit 1).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gpufolio import sources  # noqa: E402
from gpufolio.provenance import diff_digest_of  # noqa: E402
from gpufolio.store import write_atomic  # noqa: E402


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def box_diff_digest(stamped_sha: str, commit: str) -> str:
    """``git diff HEAD``'s digest, as the stamp takes it, in a checkout of ``stamped_sha`` whose tracked files
    are ``commit``'s."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "tree"
        _git("worktree", "add", "-q", "--detach", str(work), stamped_sha)
        try:
            for name in _git("ls-files", "-z", cwd=work).split("\0"):
                if name:
                    (work / name).unlink(missing_ok=True)
            archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
            subprocess.run(["tar", "x", "-C", str(work)], input=archive, check=True)
            diff = _git("diff", "HEAD", cwd=work)
        finally:
            _git("worktree", "remove", "--force", str(work))
    return diff_digest_of(diff)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit")
    ap.add_argument("files", nargs="+", type=Path)
    a = ap.parse_args(argv)
    import git

    repo = git.Repo(ROOT)
    sha = repo.commit(a.commit).hexsha
    tree = sources.commit_tree(repo, sha)
    failed = 0
    for path in a.files:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        stamped = {(r["git"]["sha"], r["git"]["diff_digest"]) for r in records}
        if len(stamped) != 1:
            print(f"{path}: records disagree on their git block; left alone")
            failed += 1
            continue
        stamped_sha, stamped_digest = stamped.pop()
        if stamped_sha == sha or not stamped_digest:
            print(f"{path}: not stamped dirty at another commit; left alone")
            continue
        found = box_diff_digest(stamped_sha, sha)
        wrong = [r for r in records if r["git"]["source_digest"] != sources.digest(r["project"], tree, ROOT)]
        if found != stamped_digest or wrong:
            print(f"{path}: diff digest {found} vs stamped {stamped_digest}, {len(wrong)} source digests differ; "
                  "left alone")
            failed += 1
            continue
        for r in records:
            r["git_as_stamped"] = r["git"]
            r["git"] = {"sha": sha, "branch": None, "dirty": False, "diff_digest": None,
                        "source_digest": r["git"]["source_digest"], "source": "provenance_file"}
        write_atomic(path, "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in records))
        print(f"{path}: {len(records)} records restamped at {sha[:7]} (diff digest {found} reproduced)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
