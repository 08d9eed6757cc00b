"""Charts: drawn at twice the display resolution, at most MAX_LEGEND legend entries, legends inside the image,
one x value drawn as bars (never a one-point line "against X"), and the pages mark charts 2x."""
from __future__ import annotations

import struct

import pandas as pd
import pytest
from gpufolio.site import charts


def _rows(n_variants: int, xs: list[int]) -> pd.DataFrame:
    out = []
    for i in range(n_variants):
        for x in xs:
            out.append({"variant": f"v{i:02d}", "role": "baseline" if i == 0 else "candidate",
                        "label": f"variant {i} with a label long enough to wrap in the legend" if i % 3 else f"v{i}",
                        "value": float(10 + i + x / 1000), "metric_unit": "TFLOP/s", "higher_is_better": True,
                        "status": "ok", "is_headline_metric": True, "x": x})
    return pd.DataFrame(out)


@pytest.fixture
def figures(monkeypatch):
    """Every figure a chart saves, checked before it is closed."""
    seen = []
    save = charts._save

    def keep(fig, path, *a, **k):
        out = save(fig, path, *a, **k)
        seen.append(fig)
        return out

    monkeypatch.setattr(charts, "_save", keep)
    return seen


def _png_size(path) -> tuple[int, int]:
    return struct.unpack(">II", path.read_bytes()[16:24])


def _inside(fig) -> bool:
    fig.canvas.draw()
    box = fig.bbox
    return all(leg.get_window_extent().x0 >= box.x0 - 1 and leg.get_window_extent().x1 <= box.x1 + 1
               and leg.get_window_extent().y0 >= box.y0 - 1 for leg in fig.legends)


def test_twice_the_display_resolution(tmp_path, figures):
    path = charts.variant_lines(tmp_path / "c.png", _rows(3, [1024, 2048, 4096]), "M", "t")
    w, h = _png_size(path)
    fig = figures[-1]
    dpi = 2 * charts.DISPLAY_DPI
    assert abs(w - fig.get_figwidth() * dpi) <= 1 and abs(h - fig.get_figheight() * dpi) <= 1


@pytest.mark.parametrize("n", [3, 8, 14])
def test_lines_keep_at_most_eight_legend_entries_inside_the_image(tmp_path, figures, n):
    charts.variant_lines(tmp_path / "c.png", _rows(n, [1024, 2048, 4096]), "M", "t")
    fig = figures[-1]
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert len(labels) <= charts.MAX_LEGEND
    assert (f"other variants ({n - charts.MAX_LEGEND + 1})" in labels) == (n > charts.MAX_LEGEND)
    assert _inside(fig)


def test_one_x_value_is_drawn_as_bars_not_a_line(tmp_path, figures):
    charts.variant_lines(tmp_path / "c.png", _rows(4, [4096]), "M", "t")
    ax = figures[-1].axes[0]
    assert len(ax.patches) == 4 and not ax.get_lines()[1:]  # four bars; no line but the baseline marker


def test_roofline_legend_is_roofs_and_benches(tmp_path, figures):
    points = pd.DataFrame([{"label": f"bench{b}: variant {v}", "ai": 100.0 * (b + 1), "tflops": 10.0 + v,
                            "role": "baseline" if v == 0 else "candidate"} for b in range(3) for v in range(8)])
    charts.roofline(tmp_path / "r.png", points, {"copy_gbps": 4000.0, "bf16_tflops": 700.0, "fp32_tflops": 50.0},
                    "NVIDIA H200", "t")
    fig = figures[-1]
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert len(labels) <= charts.MAX_LEGEND and {"bench0", "bench1", "bench2", "baselines"} <= set(labels)
    assert _inside(fig)


def test_pages_mark_charts_2x(built_site):
    _, site = built_site
    html = (site / "projects/gemm_ladder/index.html").read_text(encoding="utf-8")
    assert 'srcset="../../generated/charts/gemm_ladder-sgemm-headline.png 2x"' in html
