"""The trade-off chart is drawn from one run's committed records, one panel per token count."""
import pytest
from gpufolio_projects.fused_kernels.lab import plot_lce

RUN = "20261203T053445Z-7ab1a4"  # the first run with both token counts (committed under results/)


def test_load_reads_one_run_and_one_shape():
    rows = plot_lce.load(RUN, 4096)
    assert {r["variant"] for r in rows} >= {"fused_lowmem", "torch_compile", "liger"}
    assert all(r["ms"] > 0 and r["gib"] > 0 for r in rows)


def test_plot_writes_a_png(tmp_path):
    out = plot_lce.plot(RUN, tmp_path / "lce.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_run_is_a_clear_error():
    with pytest.raises(SystemExit, match="no ok linear_cross_entropy records of run nope"):
        plot_lce.load("nope", 8192)
