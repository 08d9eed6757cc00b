"""Reading and checking OSS-PR notes: front matter -> schema (note-v1.json) -> cross-field rules -> the store.

A note is ``projects/oss_pr_notes/notes/<slug>/note.md`` (with an optional ``repro/bench.py`` beside it) or
``notes/<slug>.md``. Its YAML front matter says what was changed upstream, its status, and which records of our
results store hold its before/after numbers. Every error names the file and the field, so ``gpufolio check`` can
print them as they are.

The rules the schema cannot state alone are here: the PR URL names the declared repository and PR number, the
dates are in order, and the declared run holds records for both the ``before`` and ``after`` variants.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("note-v1.json")
NOTES_SUBDIR = Path("projects") / "oss_pr_notes" / "notes"
PLACEHOLDER = "FILL IN"  # what `pr-note new` leaves where git cannot know the answer
STATUSES = ("idea", "prepared", "open", "merged", "closed")
SUBMITTED = ("open", "merged", "closed")
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n?(.*)\Z", re.S)
_PR_URL = re.compile(r"^https://github\.com/(?P<owner>[^/]+)/(?P<repo>[^/]+)/pull/(?P<number>[0-9]+)$")


class NoteError(ValueError):
    """A note that cannot be read at all (no front matter, YAML that does not parse)."""


@dataclass
class Note:
    path: Path  # the .md file
    meta: dict  # the front matter, dates as ISO strings
    body: str  # the Markdown after the front matter

    @property
    def slug(self) -> str:
        return self.meta.get("slug") or self.path.stem

    @property
    def status(self) -> str:
        return self.meta.get("status", "")

    @property
    def repro_dir(self) -> Path | None:
        d = self.path.parent / "repro"
        return d if self.path.name == "note.md" and (d / "bench.py").is_file() else None


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    cls = jsonschema.validators.validator_for(schema())
    return cls(schema(), format_checker=cls.FORMAT_CHECKER)


def notes_dir(root: Path | None = None) -> Path:
    from gpufolio.store import repo_root

    return (Path(root) if root is not None else repo_root()) / NOTES_SUBDIR


def find_note_files(notes_root: Path) -> list[Path]:
    """``<slug>.md`` and ``<slug>/note.md`` under the notes folder (README.md there is documentation)."""
    if not notes_root.is_dir():
        return []
    flat = [p for p in notes_root.glob("*.md") if p.name.lower() != "readme.md"]
    nested = list(notes_root.glob("*/note.md"))
    return sorted(flat + nested)


def _isoformat_dates(value: Any) -> Any:
    # YAML reads 2026-12-02 as a date object; the schema (and JSON) speak ISO strings.
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10]
    if isinstance(value, dict):
        return {k: _isoformat_dates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_isoformat_dates(v) for v in value]
    return value


def parse(text: str, path: Path) -> Note:
    import yaml

    m = _FRONT.match(text)
    if not m:
        raise NoteError(f"{path}: no YAML front matter (the file must start with a '---' line and close it with '---')")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        raise NoteError(f"{path}: front matter is not valid YAML: {e}".replace("\n", " ")) from e
    if not isinstance(meta, dict):
        raise NoteError(f"{path}: front matter must be a mapping of fields")
    return Note(path=path, meta=_isoformat_dates(meta), body=m.group(2))


def read_note(path: Path) -> Note:
    return parse(Path(path).read_text(encoding="utf-8"), Path(path))


def _field(parts) -> str:
    return ".".join(str(p) for p in parts) or "(front matter)"


def schema_errors(note: Note) -> list[str]:
    """Schema violations, each as '<file>: <field>: <message>'; status rules say which status demanded them."""
    out = []
    for err in sorted(_validator().iter_errors(note.meta), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        msg = err.message
        if err.validator == "oneOf":  # "X or null": the non-null branch's complaint is the useful one
            specific = [c for c in err.context if c.validator != "type"]
            msg = specific[0].message if specific else msg
        if err.validator == "additionalProperties":
            msg = f"unknown field(s): {msg}"
        if "allOf" in err.schema_path:  # a status rule: say which status asked for it
            must_be_empty = err.validator == "type" and err.validator_value == "null"
            if must_be_empty:
                msg = f"must be empty while status is {note.status!r} (got {err.instance!r})"
            else:
                msg = f"{'missing' if err.instance is None else msg} (required when status is {note.status!r})"
        out.append(f"{note.path}: {_field(err.absolute_path)}: {msg}")
    return out


def rule_errors(note: Note) -> list[str]:
    """Cross-field rules: URL names the declared repo and number, dates in order, slug matches the file."""
    meta, where, out = note.meta, note.path, []
    expected_slug = note.path.parent.name if note.path.name == "note.md" else note.path.stem
    if meta.get("slug") and meta["slug"] != expected_slug:
        out.append(f"{where}: slug: {meta['slug']!r} does not match its location {expected_slug!r}")

    pr = meta.get("pr") if isinstance(meta.get("pr"), dict) else {}
    upstream = meta.get("upstream") if isinstance(meta.get("upstream"), dict) else {}
    url, number, repo = pr.get("url"), pr.get("number"), upstream.get("repo")
    if isinstance(url, str):
        m = _PR_URL.match(url)  # a URL of the wrong shape is the schema's error; here: does it name our PR?
        if m:
            if isinstance(repo, str) and f"{m['owner']}/{m['repo']}".lower() != repo.lower():
                out.append(f"{where}: pr.url: {url!r} is not on the declared upstream repository {repo!r}")
            if isinstance(number, int) and int(m["number"]) != number:
                out.append(f"{where}: pr.number: {number} does not match the URL's pull request {m['number']}")

    dates = meta.get("dates") if isinstance(meta.get("dates"), dict) else {}
    parsed = {}
    for key in ("created", "opened", "merged", "closed"):
        value = dates.get(key)
        if isinstance(value, str):
            try:
                parsed[key] = dt.date.fromisoformat(value)
            except ValueError:
                pass  # the schema's format check names it
    for earlier, later in (("created", "opened"), ("opened", "merged"), ("opened", "closed"), ("created", "merged"), ("created", "closed")):
        if earlier in parsed and later in parsed and parsed[later] < parsed[earlier]:
            out.append(f"{where}: dates.{later}: {parsed[later]} is before dates.{earlier} {parsed[earlier]}")
    change = meta.get("change") if isinstance(meta.get("change"), dict) else {}
    if isinstance(change.get("patch"), str) and not (note.path.parent / change["patch"]).is_file():
        out.append(f"{where}: change.patch: {change['patch']!r} is not a file beside the note")
    for key in ("title", "hardware", "correctness"):
        if isinstance(meta.get(key), str) and PLACEHOLDER in meta[key]:
            out.append(f"{where}: {key}: still the draft placeholder {PLACEHOLDER!r}: write it")
    if PLACEHOLDER in note.body:
        out.append(f"{where}: (body): still has the draft placeholder {PLACEHOLDER!r}: write it")
    today = dt.date.today()
    for key, value in parsed.items():
        if value > today:
            out.append(f"{where}: dates.{key}: {value} is in the future")
    return out


def results_errors(note: Note, frame) -> list[str]:
    """The declared run must be in the store with ok records for both variants (and the headline shape)."""
    res = note.meta.get("results")
    if not isinstance(res, dict) or not res.get("run_id"):
        return []  # absence is the schema's business (required for submitted notes); "not yet measured" otherwise
    from .results import pairs

    where, run_id = note.path, res["run_id"]
    rows = frame[(frame["run_id"] == run_id)] if frame is not None and len(frame) else None
    if rows is None or rows.empty:
        return [f"{where}: results.run_id: run {run_id!r} is not in the results store"]
    out = []
    rows = rows[(rows["project"] == res.get("project")) & (rows["bench"] == res.get("bench"))]
    if rows.empty:
        return [f"{where}: results.bench: run {run_id!r} has no records of {res.get('project')}/{res.get('bench')}"]
    for side in ("before", "after"):
        variant = res.get(side)
        got = rows[(rows["variant"] == variant) & (rows["status"] == "ok")]
        if got.empty:
            out.append(f"{where}: results.{side}: run {run_id!r} has no ok record of variant {variant!r}")
    if not out and res.get("headline_params") and pairs(frame, res, headline_only=True).empty:
        out.append(f"{where}: results.headline_params: run {run_id!r} has no before/after pair with params {res['headline_params']}")
    return out


def validate_note(note: Note, frame=None) -> list[str]:
    errors = schema_errors(note) + rule_errors(note)
    if not errors:  # result ids are only looked up in a note whose fields make sense
        errors += results_errors(note, frame)
    return errors


def load_notes(root: Path | None = None) -> tuple[list[Note], list[str]]:
    """Every note under the repository's notes folder, and the errors of those that cannot be read."""
    notes, errors = [], []
    for path in find_note_files(notes_dir(root)):
        try:
            notes.append(read_note(path))
        except NoteError as e:
            errors.append(str(e))
    return notes, errors


def validate_all(root: Path | None = None, frame=None) -> list[str]:
    """Error strings (file and field named) for every note; [] when all are valid. ``gpufolio check`` calls this.

    ``frame`` is the store's long-format DataFrame; by default it is loaded from ``root`` (bad store lines are
    the store check's to report, so they are skipped here, not raised)."""
    notes, errors = load_notes(root)
    needs_store = any(isinstance(n.meta.get("results"), dict) and n.meta["results"].get("run_id") for n in notes)
    if frame is None and needs_store:
        from gpufolio.store import load_frame

        frame = load_frame(root, strict=False)
    seen: dict[str, Path] = {}
    for note in notes:
        errors += validate_note(note, frame)
        if note.slug in seen:
            errors.append(f"{note.path}: slug: {note.slug!r} is also used by {seen[note.slug]}")
        seen.setdefault(note.slug, note.path)
    return errors
