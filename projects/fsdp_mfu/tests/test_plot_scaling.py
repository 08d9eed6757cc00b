"""plot_scaling on synthetic records: the efficiency of every point against its line's base, HSDP against FSDP2's
line, the newest record of a point, the loss difference to the base point, and a chart drawn per model."""
from __future__ import annotations

import pytest
from gpufolio_projects.fsdp_mfu.lab import plot_scaling as P


def rec(variant, gpus, scaling, tok_s, mfu, *, model="llama_1b", B=32, G=None, loss=5.0, created="2026-12-04T10:00",
        status="ok"):
    params = {"model": model, "scaling": scaling, "gpus": gpus, "B": B, "G": G or B * gpus, "T": 2048}
    return {"project": "fsdp_mfu", "bench": "scaling", "variant": variant, "status": status, "params": params,
            "created_at": created, "metric": {"name": "mfu", "value": mfu},
            "extra_metrics": [{"name": "tok_s", "value": tok_s}, {"name": P.LOSS, "value": loss}]}


RECORDS = [
    rec("ddp", 1, "base", 1000.0, 55.0), rec("fsdp2", 1, "base", 1010.0, 56.0),
    rec("ddp", 8, "weak", 7200.0, 50.0), rec("fsdp2", 8, "weak", 7600.0, 53.0), rec("hsdp", 8, "weak", 7800.0, 54.0),
    rec("fsdp2", 2, "weak", 1500.0, 40.0, created="2026-12-01T00:00"),  # an older run of the next point
    rec("fsdp2", 2, "weak", 1980.0, 55.0),
    rec("fsdp2", 8, "strong", 6000.0, 42.0, B=4, G=32, loss=5.0004),
    rec("ddp", 4, "weak", 0.0, 0.0, status="failed_correctness"),  # no number: not drawn
    rec("fsdp2", 4, "weak", 3900.0, 54.0, model="llama_8b", B=1),  # its line has no 1-GPU point: base is 4 GPUs
    rec("fsdp2", 8, "weak", 7410.0, 51.0, model="llama_8b", B=1),
]


def test_efficiency_of_each_point_against_its_line():
    rows = {(r["model"], r["scaling"], r["strategy"], r["gpus"]): r for r in P.table(RECORDS)}
    assert rows[("llama_1b", "weak", "ddp", 8)]["efficiency"] == pytest.approx(0.9)
    assert rows[("llama_1b", "weak", "fsdp2", 2)]["efficiency"] == pytest.approx(1980 / 2020)  # the newer record
    assert rows[("llama_1b", "weak", "hsdp", 8)]["efficiency"] == pytest.approx(7800 / 8080)  # FSDP2's base
    assert rows[("llama_1b", "weak", "hsdp", 8)]["base_gpus"] == 1
    strong = rows[("llama_1b", "strong", "fsdp2", 8)]
    assert strong["efficiency"] == pytest.approx(6000 / 8080) and strong["loss_vs_base"] == pytest.approx(0.0004)
    # the base point belongs to both lines
    assert rows[("llama_1b", "strong", "ddp", 1)]["efficiency"] == rows[("llama_1b", "weak", "ddp", 1)]["efficiency"] == 1
    assert ("llama_1b", "weak", "ddp", 4) not in rows
    assert rows[("llama_8b", "weak", "fsdp2", 8)]["efficiency"] == pytest.approx(7410 / 7800)
    assert rows[("llama_8b", "weak", "fsdp2", 8)]["base_gpus"] == 4


def test_draws_one_chart_per_model(tmp_path):
    rows = P.table(RECORDS)
    for model in ("llama_1b", "llama_8b"):
        png = P.draw(rows, model, tmp_path / f"scaling_{model}.png")
        assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="no measured"):
        P.draw(rows, "llama_350m", tmp_path / "x.png")


def test_cli_refuses_results_with_no_scaling_record(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(SystemExit) as e:
        P.main(["--records", str(empty), "--out", str(tmp_path)])
    assert e.value.code == 2 and "nothing to draw" in capsys.readouterr().err
