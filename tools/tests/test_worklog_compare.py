"""worklog new --before --after: both runs pinned the way the site's markers read them, the comparison in the entry."""
import json
from datetime import date

from gpufolio import worklog
from gpufolio.site import markers
from made_records import RA, RB, rec


def _store(root):
    results = root / "projects" / "fused_kernels" / "results"
    results.mkdir(parents=True)
    runs = {RA: [rec(RA, ms=1.0, created="2026-12-01T10:00:00+00:00"),
                 rec(RA, "eager", 2.0, created="2026-12-01T10:00:00+00:00"),
                 rec(RA, ms=1.0, T=2048, created="2026-12-01T10:00:00+00:00"),
                 rec(RA, bench="swiglu", created="2026-12-01T10:00:00+00:00")],
            RB: [rec(RB, ms=0.8, sha="b" * 40, created="2026-12-02T10:00:00+00:00"),
                 rec(RB, "eager", 2.0, sha="b" * 40, created="2026-12-02T10:00:00+00:00")]}
    for run_id, recs in runs.items():
        (results / f"{run_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")


def test_entry_pins_both_runs_and_holds_the_comparison(tmp_path):
    _store(tmp_path)
    path, text = worklog.draft_change("Faster RMSNorm", "fused_kernels", "latest~1", "latest", tmp_path,
                                      day=date(2026, 12, 3))
    assert path == tmp_path / "worklog" / "2026-12-03-faster-rmsnorm.md"
    meta = markers.front_matter(text, str(path))
    assert markers.front_runs(meta, str(path))["fused_kernels"] in (RB, [RB])  # a run id (or a list of one)
    assert meta["categories"] == ["fused_kernels"] and meta["draft"] is True
    head, _, rest = text.partition("<!-- more -->")
    assert head.rstrip().endswith("(One paragraph: it is the excerpt.)")
    assert f"<!-- results-table: project=fused_kernels bench=rmsnorm run={RA} -->" in rest  # before: named
    assert "<!-- results-table: project=fused_kernels bench=rmsnorm -->" in rest  # after: the front matter's
    assert f"bench=swiglu run={RA} -->" in rest and "bench=swiglu -->" not in rest  # only where the run has it
    row = next(line for line in rest.splitlines() if line.startswith("| `rmsnorm` | fused | T=1024"))
    assert "| 1.250 |" in row and row.endswith("| faster |")
    assert "Only before: `rmsnorm` fused T=2048 (ok)" in rest
    assert f"python -m gpufolio compare {RA} {RB} --project fused_kernels" in rest


def test_cli_bad_run_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    _store(tmp_path)
    monkeypatch.setenv("GPUFOLIO_ROOT", str(tmp_path))
    assert worklog.main(["new", "x", "--project", "fused_kernels", "--before", "nope", "--after", "latest"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpufolio worklog: no run of fused_kernels matches 'nope'") and err.count("\n") == 1
    assert worklog.main(["new", "x", "--project", "fused_kernels", "--before", RA]) == 2
    assert "--before and --after go together" in capsys.readouterr().err
    assert worklog.main(["new", "x", "--project", "fused_kernels", "--before", RA, "--after", RB,
                         "--date", "2026-12-03"]) == 0
    assert (tmp_path / "worklog" / "2026-12-03-x.md").is_file()
