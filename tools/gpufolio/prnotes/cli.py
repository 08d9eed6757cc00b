"""``python -m gpufolio pr-note ...``: the lead's CLI passes the arguments after ``pr-note`` to ``main``.

    pr-note new --repo PATH --branch B [--base main] [--out DIR] [--upstream OWNER/NAME] [--slug S]
    pr-note check                       validate every note (what ``gpufolio check`` runs for notes)
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpufolio pr-note", description="OSS-PR notes: draft and check.")
    sub = p.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="draft a note from a branch of a local clone of the upstream project")
    new.add_argument("--repo", required=True, type=Path, help="path of the local clone")
    new.add_argument("--branch", required=True, help="the branch holding the change")
    new.add_argument("--base", default="main", help="the upstream branch, tag or commit it goes into (default: main)")
    new.add_argument("--out", type=Path, default=None, help="notes folder (default: projects/oss_pr_notes/notes)")
    new.add_argument("--upstream", default=None, help="owner/name on github.com (default: from the clone's remotes)")
    new.add_argument("--slug", default=None, help="the note's folder name (default: from the branch name)")
    sub.add_parser("check", help="validate every note against note-v1.json, its rules and the results store")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(argv) if argv is not None else None)
    if args.command == "check":
        from . import validate_all

        errors = validate_all()
        for e in errors:
            print(e, file=sys.stderr)
        print(f"pr-note check: {len(errors)} error(s)" if errors else "pr-note check: every note is valid")
        return 1 if errors else 0

    from .draft import DraftError, draft, write_draft
    from .notes import notes_dir

    try:
        meta, body = draft(args.repo, args.branch, base=args.base, upstream=args.upstream, slug=args.slug)
        path = write_draft(meta, body, args.out if args.out is not None else notes_dir())
    except DraftError as e:
        print(f"pr-note new: error: {e}", file=sys.stderr)
        return 2
    c = meta["change"]
    print(f"drafted {path}: {len(c['commits'])} commit(s), {c['files_changed']} file(s), "
          f"+{c['insertions']} -{c['deletions']}; fill in the FILL IN fields, then run `gpufolio check`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
