"""Golden tests of the render step on the fixture store: home table, a project page, runs, not counted, README
table, worklog posts, nav; plus the README splice and the worklog draft."""
from __future__ import annotations

import re
from datetime import date

import pytest
import yaml
from gpufolio import worklog
from gpufolio.site import readme
from gpufolio.site import tables as T


def page(rendered, rel):
    return (rendered.docs_dir / rel).read_text(encoding="utf-8")


def test_home_table_golden(rendered, golden):
    golden("home_table.md", T.home_table(rendered.df, rendered.site) + "\n")


def test_home_table_has_six_rows_in_project_order(rendered):
    rows = [line for line in T.home_table(rendered.df, rendered.site).splitlines()[2:]]
    assert len(rows) == 6
    assert [re.search(r"projects/(\w+)\.md", r).group(1) for r in rows] == [
        "gemm_ladder", "flash_attention", "fused_kernels", "fsdp_mfu", "inference_engine", "oss_pr_notes"]
    assert "not yet measured" in rows[5]
    assert "gf-stale" in rows[1] and "gf-loses" in rows[1]  # stale and losing, both visible


def test_project_page_golden(rendered, golden):
    golden("gemm_ladder.md", page(rendered, "projects/gemm_ladder.md"))


def test_project_page_puts_results_before_the_writeup(rendered):
    text = page(rendered, "projects/gemm_ladder.md")
    order = [text.index(s) for s in ("## Headline results", "](../generated/charts/gemm_ladder-sgemm-headline.png)",
                                      "A fixture writeup", "## Every variant, every size", "## Against the hardware",
                                      "## Not counted", "## Environment", "## Reproduce")]
    assert order == sorted(order)
    assert text.startswith("# GEMM ladder (fixture)\n")
    assert "[notes.txt](https://github.com/example-owner/example-repo/blob/main/projects/gemm_ladder/notes.txt)" in text
    assert "[its own page](flash_attention.md)" in text
    assert (rendered.docs_dir / "generated/files/projects/gemm_ladder/ladder.png").is_file()


def test_unmeasured_project_says_so(rendered):
    text = page(rendered, "projects/oss_pr_notes.md")
    assert "Not yet measured" in text and "TFLOP/s" not in text


def test_runs_page_has_an_anchor_per_run(rendered):
    text = page(rendered, "runs.md")
    anchors = re.findall(r"^## (\S+) \{#(run-[a-z0-9-]+)\}$", text, re.M)
    assert len(anchors) == rendered.df.run_id.nunique() == 9
    assert [a for _, a in anchors] == [f"run-{r.lower()}" for r, _ in anchors]
    # every run link anywhere points at an anchor that exists
    targets = set()
    for p in rendered.docs_dir.rglob("*.md"):
        targets |= set(re.findall(r"runs\.md#(run-[a-z0-9-]+)", p.read_text(encoding="utf-8")))
    assert targets and targets <= {a for _, a in anchors}


def test_not_counted_page_golden(rendered, golden):
    golden("not_counted.md", page(rendered, "not-counted.md"))


def test_readme_table_golden(rendered, golden, site_cfg):
    golden("readme_table.md", readme.headline_table(rendered.df, site_cfg) + "\n")


def test_worklog_post_copied_with_markers_resolved(rendered):
    text = page(rendered, "worklog/posts/2026-12-01-fixture-entry.md")
    assert text.startswith("---\ndate: 2026-12-01\n")
    assert "<!-- result" not in text and "<!-- results-table" not in text
    assert "**790 TFLOP/s** (1.03× cuBLAS, NVIDIA H200, [run 2026-12-01](../../runs.md#run-20261201t101500z-a1a1a1))" in text
    assert not (rendered.docs_dir / "worklog/posts/README.md").exists()


def test_nav_lists_every_generated_page(rendered):
    nav = yaml.safe_load(page(rendered, ".nav.yml"))
    flat = []

    def walk(items):
        for item in items:
            for v in item.values() if isinstance(item, dict) else [item]:
                walk(v) if isinstance(v, list) else flat.append(v)

    walk(nav)
    for rel in flat:
        assert (rendered.docs_dir / rel).is_file(), rel
    assert {f"projects/{p}.md" for p in ("gemm_ladder", "oss_pr_notes")} <= set(flat)


def test_readme_splice_replaces_only_between_markers():
    text = f"intro\n{readme.START}\nold\n{readme.END}\noutro\n"
    assert readme.splice(text, "new") == f"intro\n{readme.START}\nnew\n{readme.END}\noutro\n"
    with pytest.raises(readme.ReadmeError, match="needs exactly one"):
        readme.splice("no markers here", "new")


def test_readme_update_and_check(tmp_path, rendered, site_cfg):
    path = tmp_path / "README.md"
    path.write_text(f"# x\n{readme.START}\nstale table\n{readme.END}\n", encoding="utf-8")
    assert readme.update(path, rendered.df, site_cfg, check=True) is False
    assert "stale table" in path.read_text()  # check mode never writes
    assert readme.update(path, rendered.df, site_cfg) is False
    assert readme.update(path, rendered.df, site_cfg, check=True) is True


def test_worklog_draft_embeds_the_latest_run(fixture_root):
    path, text = worklog.draft("Vectorised loads!", "gemm_ladder", fixture_root, day=date(2026, 12, 3))
    assert path == fixture_root / "worklog" / "2026-12-03-vectorised-loads.md"
    assert "categories:\n  - gemm_ladder\ndraft: true" in text
    # the newest ok run is the dirty one: the draft pins it, and the site will badge it as not counted
    assert "<!-- results-table: project=gemm_ladder bench=sgemm run=20261202T091500Z-b2b2b2 -->" in text


def test_worklog_draft_without_records(fixture_root):
    _, text = worklog.draft("First notes", "oss_pr_notes", fixture_root, day=date(2026, 12, 3))
    assert "No ok record of this project yet" in text and "<!-- results-table" not in text


def test_cli_fails_with_one_line_naming_file_and_line(tmp_path, monkeypatch, capsys, repo):
    """`python -m gpufolio site` on a checkout whose writeup names a missing record: exit 2, one line."""
    from gpufolio import site

    root = tmp_path / "repo"
    (root / "projects" / "gemm_ladder").mkdir(parents=True)
    (root / "projects" / "gemm_ladder" / "README.md").write_text(
        "# G\n\n<!-- result: project=gemm_ladder bench=sgemm variant=v metric=tflops -->\n", encoding="utf-8")
    (root / "mkdocs.yml").write_text((repo / "mkdocs.yml").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "README.md").write_text(f"# r\n{readme.START}\n{readme.END}\n", encoding="utf-8")
    monkeypatch.setenv("GPUFOLIO_ROOT", str(root))
    monkeypatch.setattr("gpufolio.site.build.prepare_docs_dir",
                        lambda _root, docs: __import__("shutil").copytree(repo / "site_src", docs, dirs_exist_ok=True))
    assert site.main(["--render-only"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("gpufolio site: projects/gemm_ladder/README.md:3: project 'gemm_ladder' has no records yet")
    # the README table is rewritten before the writeups are rendered: a bad marker does not leave it stale
    assert "not yet measured" in (root / "README.md").read_text(encoding="utf-8")


def test_every_project_writeup_has_a_page(rendered):
    """A second writeup of a project (the fixture's bf16/README.md) is a page with its rung table, in the nav and
    linked from the project page; a link to it from another writeup goes to that page."""
    text = page(rendered, "projects/gemm_ladder/bf16.md")
    assert text.startswith("# BF16 ladder (fixture)\n")
    assert "| Variant |" in text and "](../../generated/charts/" in text  # rung table and chart resolved
    assert "[the ladder](../gemm_ladder.md)" in text
    assert "[BF16 ladder (fixture)](gemm_ladder/bf16.md)" in page(rendered, "projects/gemm_ladder.md")
    nav = yaml.safe_load(page(rendered, ".nav.yml"))
    projects = next(item["Projects"] for item in nav if "Projects" in item)
    gemm = next(item["GEMM ladder"] for item in projects if "GEMM ladder" in item)
    assert {"BF16 ladder (fixture)": "projects/gemm_ladder/bf16.md"} in gemm


def test_long_writeups_fold_their_detail_sections():
    from gpufolio.site import writeup

    body = "\n".join(["Intro."] + [f"## Results\n\nnumbers {i}" if i == 0 else f"## Step {i}\n\n" + "line\n" * 12
                                    for i in range(8)])
    out = writeup.collapse_details(body)
    assert "## Results\n\nnumbers 0" in out  # results stay open
    assert out.count('??? note "Details"') == 7 and "## Step 3" in out  # headings stay, bodies fold
    assert writeup.collapse_details("## Step\n\nshort") == "## Step\n\nshort"


def test_runs_page_folds_each_run_and_prints_no_dicts(rendered):
    text = page(rendered, "runs.md")
    assert text.count('??? info "Stamp"') == rendered.df.run_id.nunique()
    assert "{'" not in text and "': " not in text  # no Python dict reprs
    assert "--out " not in text


def test_variant_table_caption_is_the_benchs_declared_metric(rendered):
    """A run whose first row has no number (a skipped variant) still captions its table with the bench's unit."""
    from gpufolio.site import select as S

    df = rendered.df
    run = S.latest_run(df[df.project == "gemm_ladder"], "gemm_ladder", "sgemm").copy()
    first = run.sort_values(["variant"]).index[0]
    run.loc[first, ["metric_unit", "value", "status"]] = [None, None, "skipped"]
    ctx = type("Ctx", (), {"page": "projects/gemm_ladder.md"})()
    caption = T.variant_table(run, ctx).rsplit("\n", 1)[-1]
    assert caption.startswith("*TFLOP/s, higher is better;"), caption
