"""The note format: note-v1.json plus the cross-field rules, each status rule and each way a claim can be wrong."""
from __future__ import annotations

import datetime as dt

import pytest
from gpufolio.prnotes import validate_all
from gpufolio.prnotes.notes import read_note, validate_note


def errors_of(write_note, meta, frame=None, body="\n## What changes\n\nA multi-row kernel.\n"):
    path = write_note(meta, body)
    return path, validate_note(read_note(path), frame)


def only_error(errors, path, field, *words):
    """Exactly one error, naming the file and the field, with every word in it."""
    assert len(errors) == 1, errors
    err = errors[0]
    assert err.startswith(f"{path}: {field}:"), err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("status", ["idea", "prepared", "open", "merged", "closed"])
def test_valid_note_of_each_status(status, note_meta, write_note, store_frame):
    _, errors = errors_of(write_note, note_meta(status), store_frame)
    assert errors == []


def test_prepared_may_lack_result_ids(note_meta, write_note):
    _, errors = errors_of(write_note, note_meta("prepared"), frame=None)
    assert errors == []


@pytest.mark.parametrize("status", ["open", "merged", "closed"])
@pytest.mark.parametrize("section,key", [("pr", "url"), ("dates", "opened"), ("results", "run_id")])
def test_submitted_needs(section, key, status, note_meta, write_note, store_frame):
    """An open, merged or closed note names its PR, the day it was opened, and the run its numbers come from."""
    meta = note_meta(status)
    meta[section][key] = None
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, f"{section}.{key}", f"required when status is {status!r}")


def test_merged_needs_merge_date(note_meta, write_note, store_frame):
    meta = note_meta("merged")
    del meta["dates"]["merged"]
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "dates", "'merged' is a required property", "status is 'merged'")


def test_closed_needs_close_date_and_no_merge_date(note_meta, write_note, store_frame):
    meta = note_meta("closed")
    meta["dates"]["closed"] = None
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "dates.closed", "required when status is 'closed'")
    meta = note_meta("closed")
    meta["dates"]["merged"] = "2026-11-24"
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "dates.merged", "must be empty while status is 'closed'")


@pytest.mark.parametrize("status", ["idea", "prepared"])
def test_unsubmitted_note_carries_no_pr(status, note_meta, write_note):
    meta = note_meta(status)
    meta["pr"] = {"number": 5, "url": "https://github.com/linkedin/Liger-Kernel/pull/5"}
    path, errors = errors_of(write_note, meta)
    assert {e.split(": ")[1] for e in errors} == {"pr.number", "pr.url"}, errors
    assert all(f"while status is {status!r}" in e for e in errors)


@pytest.mark.parametrize("field, value, later", [
    ("opened", "2026-11-19", "dates.opened"),   # opened before created
    ("merged", "2026-11-20", "dates.merged"),   # merged before opened (2026-11-21)
])
def test_dates_in_order(field, value, later, note_meta, write_note, store_frame):
    meta = note_meta("merged")
    meta["dates"][field] = value
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, later, "is before")


@pytest.mark.parametrize("bad", ["2026-13-40", "02/12/2026", "yesterday"])
def test_malformed_date(bad, note_meta, write_note):
    meta = note_meta("prepared")
    meta["dates"]["created"] = bad
    path, errors = errors_of(write_note, meta)
    assert errors and all(e.startswith(f"{path}: dates.created:") for e in errors), errors


def test_future_date(note_meta, write_note):
    meta = note_meta("prepared")
    meta["dates"]["created"] = (dt.date.today() + dt.timedelta(days=3)).isoformat()
    path, errors = errors_of(write_note, meta)
    only_error(errors, path, "dates.created", "in the future")


@pytest.mark.parametrize("url, field, words", [
    ("https://gitlab.com/linkedin/Liger-Kernel/pull/123", "pr.url", ["does not match"]),
    ("http://github.com/linkedin/Liger-Kernel/pull/123", "pr.url", ["does not match"]),
    ("https://github.com/linkedin/Liger-Kernel/issues/123", "pr.url", ["does not match"]),
    ("https://github.com/someone/Liger-Kernel/pull/123", "pr.url", ["not on the declared upstream repository"]),
    ("https://github.com/linkedin/Liger-Kernel/pull/124", "pr.number", ["does not match the URL"]),
])
def test_bad_pr_urls(url, field, words, note_meta, write_note, store_frame):
    meta = note_meta("open")
    meta["pr"]["url"] = url
    path, errors = errors_of(write_note, meta, store_frame)
    assert any(e.startswith(f"{path}: {field}:") and all(w in e for w in words) for e in errors), errors


def test_repo_name_case_is_not_a_mismatch(note_meta, write_note, store_frame):
    meta = note_meta("open")
    meta["pr"]["url"] = "https://github.com/LinkedIn/liger-kernel/pull/123"
    _, errors = errors_of(write_note, meta, store_frame)
    assert errors == []


def test_result_ids_missing_from_store(note_meta, write_note, store_frame):
    meta = note_meta("prepared")
    meta["results"]["run_id"] = "20261202T000000Z-ffffff"
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "results.run_id", "not in the results store")
    path, errors = errors_of(write_note, meta, None)  # no store at all
    only_error(errors, path, "results.run_id", "not in the results store")


def test_result_ids_name_a_variant_the_run_lacks(note_meta, write_note, store_frame):
    meta = note_meta("open")
    meta["results"]["after"] = "patched_v2"
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "results.after", "no ok record of variant 'patched_v2'")


def test_result_ids_of_another_bench(note_meta, write_note, store_frame):
    meta = note_meta("open")
    meta["results"]["bench"] = "rmsnorm"
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "results.bench", "no records")


def test_headline_shape_must_exist(note_meta, write_note, store_frame):
    meta = note_meta("open")
    meta["results"]["headline_params"] = {"M": 32768, "N": 4096}
    assert errors_of(write_note, meta, store_frame)[1] == []
    meta["results"]["headline_params"] = {"M": 1, "N": 4096}
    path, errors = errors_of(write_note, meta, store_frame)
    only_error(errors, path, "results.headline_params", "no before/after pair")


def test_declared_patch_file_must_exist(note_meta, write_note):
    meta = note_meta("prepared")
    meta["change"]["patch"] = "branch.patch"
    path, errors = errors_of(write_note, meta)
    only_error(errors, path, "change.patch", "not a file beside the note")
    (path.parent / "branch.patch").write_text("From 0000 Mon Sep 17 00:00:00 2001\n")
    assert validate_note(read_note(path)) == []


def test_draft_placeholder_is_rejected(note_meta, write_note):
    meta = note_meta("idea")
    meta["hardware"] = "FILL IN"
    path, errors = errors_of(write_note, meta, body="\nFILL IN: the problem.\n")
    assert [e.split(": ")[1] for e in errors] == ["hardware", "(body)"], errors


def test_unknown_field_and_slug_mismatch(note_meta, write_note, tmp_path):
    meta = note_meta("idea")
    meta["stars"] = 10
    path, errors = errors_of(write_note, meta)
    only_error(errors, path, "(front matter)", "unknown field", "stars")
    meta = note_meta("idea")
    path = write_note(meta)
    renamed = path.parent.parent / "other_name" / "note.md"
    renamed.parent.mkdir()
    path.rename(renamed)
    only_error(validate_note(read_note(renamed)), renamed, "slug", "does not match")


def test_validate_all_reports_unreadable_notes(tmp_path, note_meta, write_note):
    good = write_note(note_meta("idea"))
    broken = good.parent.parent / "broken.md"
    broken.write_text("no front matter here\n")
    bad_yaml = good.parent.parent / "bad_yaml.md"
    bad_yaml.write_text("---\ntitle: [unclosed\n---\n")
    errors = validate_all(tmp_path)
    assert len(errors) == 2, errors
    assert any(e.startswith(f"{broken}:") and "no YAML front matter" in e for e in errors)
    assert any(e.startswith(f"{bad_yaml}:") and "not valid YAML" in e for e in errors)


def test_validate_all_loads_the_store_for_result_ids(tmp_path, note_meta, write_note):
    meta = note_meta("open")  # names RUN_ID, which tmp_path's (empty) store does not hold
    path = write_note(meta)
    errors = validate_all(tmp_path)
    assert errors == [f"{path}: results.run_id: run {meta['results']['run_id']!r} is not in the results store"]

