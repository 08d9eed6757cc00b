"""The contributions table and a note's page, rendered from a small store frame."""
from __future__ import annotations

import pytest
from gpufolio.prnotes.notes import read_note
from gpufolio.prnotes.site import fmt, write_pages


def test_table_and_page_show_record_numbers(tmp_path, note_meta, write_note, store_frame):
    meta = note_meta("merged")
    meta["results"]["headline_params"] = {"M": 4096, "N": 2048}
    meta["review_lessons"] = ["Reviewers asked for a test at an odd width."]
    note = read_note(write_note(meta))
    nav = write_pages(tmp_path / "docs", store_frame, notes=[note])
    assert nav == [("Contributions", "contributions/index.md"), (meta["title"], "contributions/fused_add_rmsnorm.md")]

    table = (tmp_path / "docs" / "contributions" / "index.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith(f"| [{meta['title']}]"))
    assert "(fused_add_rmsnorm.md)" in row and "gf-badge-merged" in row
    assert "1,500 → 3,000 GB/s (2.00×)" in row  # the headline shape's records, not the other shape's
    assert "[#123](https://github.com/linkedin/Liger-Kernel/pull/123)" in row

    page = (tmp_path / "docs" / "contributions" / "fused_add_rmsnorm.md").read_text()
    assert page.startswith(f"# {meta['title']}\n")
    assert "| M=4096, N=2048, dtype=bfloat16 | NVIDIA H200 | 1,500 | 3,000 | 2.00× |" in page
    assert "| M=32768, N=4096, dtype=bfloat16 | NVIDIA H200 | 2,500 | 2,000 | 0.80× |" in page
    # where the patch loses, the page says so
    assert "the ratio is below 1 at 1 of 2 shapes (M=32768, N=4096, dtype=bfloat16)" in page
    assert "Reviewers asked for a test at an odd width." in page
    assert "Other variants" not in page  # the run holds only the two


def test_other_variants_of_the_run_are_shown(tmp_path, note_meta, write_note, store_frame):
    import pandas as pd

    extra = store_frame[store_frame["variant"] == "patched"].copy()
    extra["variant"] = "patched_x8"
    extra["value"] = extra["value"] * 1.1
    note = read_note(write_note(note_meta("open")))
    write_pages(tmp_path, pd.concat([store_frame, extra]), notes=[note])
    page = (tmp_path / "contributions" / "fused_add_rmsnorm.md").read_text()
    assert "| `patched_x8` | M=4096, N=2048, dtype=bfloat16 | 3,300 | 2.20× |" in page
    assert "A multi-row kernel." in page  # the note's own body


def test_prepared_note_without_run_says_not_yet_measured(tmp_path, note_meta, write_note, store_frame):
    note = read_note(write_note(note_meta("prepared")))
    write_pages(tmp_path, store_frame, notes=[note])
    table = (tmp_path / "contributions" / "index.md").read_text()
    assert "| not yet measured | not submitted |" in table and "gf-badge-prepared" in table
    page = (tmp_path / "contributions" / "fused_add_rmsnorm.md").read_text()
    assert "> **Not yet measured.**" in page and "GB/s" not in page


def test_site_refuses_invalid_notes(tmp_path, note_meta, write_note, store_frame):
    meta = note_meta("open")
    meta["pr"]["url"] = None
    note = read_note(write_note(meta))
    with pytest.raises(ValueError, match="pr.url"):
        write_pages(tmp_path, store_frame, notes=[note])


def test_failed_records_give_no_number(tmp_path, note_meta, write_note, store_frame):
    meta = note_meta("prepared")
    meta["results"]["run_id"] = store_frame["run_id"].iloc[0]
    note = read_note(write_note(meta))
    failed = store_frame.copy()
    failed.loc[failed["variant"] == "patched", "status"] = "failed_correctness"
    with pytest.raises(ValueError, match="no ok record of variant 'patched'"):
        write_pages(tmp_path, failed, notes=[note])


def test_empty_notes_folder(tmp_path, store_frame):
    nav = write_pages(tmp_path, store_frame, notes=[])
    assert nav == [("Contributions", "contributions/index.md")]
    assert "(no notes yet)" in (tmp_path / "contributions" / "index.md").read_text()


@pytest.mark.parametrize("value, text", [(3012.4, "3,012"), (2.5678, "2.57"), (0.012345, "0.0123"), (None, "—")])
def test_fmt_three_significant_figures(value, text):
    assert fmt(value) == text
