"""The config tuner: skips configs that fail or disagree, remembers winners on disk, and never retries a config
that was pending when a process died (a hang or a crash in an experimental config)."""
import json

import pytest
import torch
import triton.testing
from gpufolio_projects.flash_attention.kernels.tuning import CONFIGS, KernelConfig, Tuner

A, B, C = KernelConfig(128, 128, 8, 3), KernelConfig(128, 64, 4, 3), KernelConfig(128, 128, 4, 2, True)
TIME = {A: 2.0, B: 1.0, C: 0.5}  # ms: C would win, B next, if they were right


@pytest.fixture
def fake_bench(monkeypatch):
    def do_bench(fn, warmup, rep):
        fn()
        return state["last_time"]

    state = {"last_time": None}
    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    return state


def make_launch(state, out, fail=(), wrong=()):
    launched = []

    def launch(cfg):
        launched.append(cfg)
        if cfg in fail:
            raise RuntimeError("out of resources")
        out.fill_(2.0 if cfg in wrong else 1.0)
        state["last_time"] = TIME[cfg]

    return launch, launched


def test_skips_failing_and_disagreeing_configs(tmp_path, fake_bench):
    out = torch.zeros(4)
    launch, launched = make_launch(fake_bench, out, fail=[B], wrong=[C])
    tuner = Tuner(tmp_path / "tune.json")
    assert tuner.pick("k", [A, B, C], launch, lambda: [out]) == A
    saved = json.loads((tmp_path / "tune.json").read_text())["k"]
    assert saved["best"] == str(A) and list(saved["timings_us"]) == [str(A)] and "pending" not in saved
    # A second process reads the winner from disk and launches nothing to decide.
    launch2, launched2 = make_launch(fake_bench, out)
    assert Tuner(tmp_path / "tune.json").pick("k", [A, B, C], launch2, lambda: [out]) == A
    assert launched2 == []


def test_fastest_agreeing_config_wins(tmp_path, fake_bench):
    out = torch.zeros(4)
    launch, _ = make_launch(fake_bench, out)
    assert Tuner(tmp_path / "t.json").pick("k", [A, B, C], launch, lambda: [out]) == C


def test_pending_config_is_never_retried(tmp_path, fake_bench):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"k": {"pending": str(C)}}))  # a process died while trying C
    out = torch.zeros(4)
    launch, launched = make_launch(fake_bench, out)
    assert Tuner(path).pick("k", [A, B, C], launch, lambda: [out]) == B
    assert C not in launched
    assert json.loads(path.read_text())["k"]["crashed"] == [str(C)]


def test_config_text_round_trips():
    for cfgs in CONFIGS.values():
        for per_d in cfgs.values():
            for cfg in per_d:
                assert KernelConfig.parse(str(cfg)) == cfg
    with pytest.raises(ValueError):
        KernelConfig.parse("128,64,4")
