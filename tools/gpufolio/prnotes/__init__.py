"""OSS-PR notes: one validated Markdown note per upstream contribution (projects/oss_pr_notes/notes/).

    validate_all(root=None) -> list[str]     every note's errors, naming file and field (``gpufolio check``)
    cli.main(argv) -> int                    ``gpufolio pr-note new|check``
    site.write_pages(docs_dir, frame)        the contributions table and a page per note

The note format is ``note-v1.json`` (front matter) plus the rules in ``notes.py``; the numbers a note shows come
from the results store through ``results.py``, never from the note's text. The format and its rules are
explained in projects/oss_pr_notes/README.md.
"""
from .notes import Note, load_notes, validate_all

__all__ = ["Note", "load_notes", "validate_all"]
