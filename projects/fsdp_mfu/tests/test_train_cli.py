"""train.py refuses bad arguments up front (exit 2, one line) and resumes from the newest complete checkpoint,
saying which; a save that did not finish leaves a folder resume skips; the logged tok/s counts the steps it was
measured over and none of the evaluations' or saves' time. CPU, tiny fp32 model, a few steps."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from gpufolio_projects.fsdp_mfu import checkpoint, train  # noqa: E402
from gpufolio_projects.fsdp_mfu.configs import get_config  # noqa: E402
from gpufolio_projects.fsdp_mfu.trainer import TrainConfig, Trainer  # noqa: E402

TINY = ["--model", "tiny", "--data", "synthetic", "--batch", "2", "--seq", "16", "--dtype", "float32",
        "--eval-every", "0", "--no-progress"]


def _fake_checkpoints(ckpt_dir, complete=(), incomplete=(), other=()):
    """step_<N> folders as parse_args sees them: a marker or none (parse_args never reads the shards)."""
    for step in complete:
        (ckpt_dir / f"step_{step}").mkdir(parents=True)
        (ckpt_dir / f"step_{step}" / checkpoint.MARKER).write_text(json.dumps({"step": step}))
    for step in incomplete:
        (ckpt_dir / f"step_{step}").mkdir(parents=True)
    for name in other:
        (ckpt_dir / name).mkdir(parents=True)


# (extra argv, checkpoints on disk or None for no --ckpt-dir folder made, what the error says)
REFUSED = [
    (["--resume"], None, "--resume needs --ckpt-dir"),
    (["--resume-if-exists"], None, "--resume-if-exists needs --ckpt-dir"),
    (["--resume", "--ckpt-dir", "{d}/missing"], None, "no complete checkpoint"),
    (["--resume", "--ckpt-dir", "{d}"], dict(incomplete=[2]), "no complete checkpoint"),
    (["--resume", "--ckpt-dir", "{d}", "--steps", "3"], dict(complete=[4]), "is past --steps 3"),
    (["--resume-if-exists", "--ckpt-dir", "{d}", "--steps", "3"], dict(complete=[4]), "is past --steps 3"),
    (["--resume", "--ckpt-dir", "{d}"], dict(complete=[2], other=["step_final"]), "step_final is not a checkpoint"),
    (["--resume", "--resume-if-exists", "--ckpt-dir", "{d}"], None, "not allowed with"),
    (["--steps", "0"], None, "--steps must be positive"),
    (["--steps", "-1"], None, "--steps must be positive"),
    (["--batch", "0"], None, "--batch must be positive"),
    (["--batch", "-2"], None, "--batch must be positive"),
    (["--seq", "129"], None, "--seq must be in [1, 128] for tiny"),
    (["--seq", "0"], None, "--seq must be in"),
    (["--ckpt-every", "5"], None, "--ckpt-every needs --ckpt-dir"),
    (["--ckpt-every", "-1", "--ckpt-dir", "{d}"], None, "--ckpt-every must be >= 0"),
    (["--eval-every", "-1"], None, "--eval-every must be >= 0"),
    (["--max-seconds", "0"], None, "--max-seconds must be positive"),
    (["--data", "stdlib", "--model", "llama_350m", "--seq", "16"], None, "needs a vocab-256 model"),
    (["--model", "nope"], None, "unknown model config"),
    (["--mode", "bogus"], None, "mode 'bogus' not in"),
    (["--steps", "ten"], None, "invalid int value"),
]


@pytest.mark.parametrize(("extra", "on_disk", "says"), REFUSED, ids=[r[2] for r in REFUSED])
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, extra, on_disk, says):
    if on_disk is not None:
        _fake_checkpoints(tmp_path, **on_disk)
    with pytest.raises(SystemExit) as e:
        train.parse_args(TINY + [a.format(d=tmp_path) for a in extra])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("usage:"), err  # a short usage line, then the error
    assert says in err[1]


def test_resume_picks_the_newest_complete_checkpoint(tmp_path):
    _fake_checkpoints(tmp_path, complete=[2, 10], incomplete=[12, 100])
    args = train.parse_args(TINY + ["--resume", "--ckpt-dir", str(tmp_path), "--steps", "20"])
    assert args.resume_from == (10, tmp_path / "step_10")  # numeric order: step_10 is newer than step_2
    fresh = train.parse_args(TINY + ["--resume-if-exists", "--ckpt-dir", str(tmp_path / "none")])
    assert fresh.resume_from is None


def _losses(log) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in log["steps"]}


def test_killed_save_falls_back_to_the_last_complete_one_and_says_so(tmp_path, capsys):
    """Save at 2 and 4, lose step 4's marker (a save killed before it finished), resume to 6: it starts at 2,
    names both, and step 6 has the loss of a run that was never interrupted."""
    ckpt = tmp_path / "ckpt"
    whole = train.main(TINY + ["--steps", "6"])
    train.main(TINY + ["--steps", "4", "--ckpt-dir", str(ckpt), "--ckpt-every", "2"])
    assert checkpoint.is_complete(ckpt / "step_2") and checkpoint.is_complete(ckpt / "step_4")
    (ckpt / "step_4" / checkpoint.MARKER).unlink()
    capsys.readouterr()
    resumed = train.main(TINY + ["--steps", "6", "--ckpt-dir", str(ckpt), "--resume"])
    out = capsys.readouterr().out
    assert f"resume: step 2 from {ckpt / 'step_2'} (skipped incomplete: step_4)" in out
    assert resumed["start_step"] == 2
    assert _losses(resumed)[6] == _losses(whole)[6]


def test_resume_if_exists_starts_fresh_and_says_so(tmp_path, capsys):
    log = train.main(TINY + ["--steps", "2", "--ckpt-dir", str(tmp_path / "new"), "--resume-if-exists"])
    assert log["start_step"] == 0
    assert "no complete checkpoint" in capsys.readouterr().out


def test_a_save_that_fails_leaves_no_marker_even_over_a_complete_checkpoint(tmp_path, monkeypatch):
    trainer = Trainer(get_config("tiny"), TrainConfig(dtype="float32"), torch.device("cpu"))
    checkpoint.save(trainer, tmp_path / "step_0")
    assert checkpoint.latest_complete(tmp_path) == (0, tmp_path / "step_0")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # stands for the kill: shards half-written, .metadata still the old one

    monkeypatch.setattr(checkpoint.dcp, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(trainer, tmp_path / "step_0")
    assert (tmp_path / "step_0" / ".metadata").exists() and not checkpoint.is_complete(tmp_path / "step_0")
    assert checkpoint.latest_complete(tmp_path) is None


def test_logged_throughput_is_over_its_own_steps_without_evaluations_or_saves(tmp_path, monkeypatch):
    """A fake clock: each training step takes 1 s, each evaluation and save 100 s. Every window then reads one
    step's tokens per second, the last one (5 steps) and those cut by an evaluation or a save included."""
    from types import SimpleNamespace

    clock = [0.0]

    def advance(fn, seconds):
        def timed(*args, **kwargs):
            clock[0] += seconds
            return fn(*args, **kwargs)
        return timed

    monkeypatch.setattr(train, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(train.Trainer, "step", advance(train.Trainer.step, 1.0))
    monkeypatch.setattr(train, "evaluate", advance(train.evaluate, 100.0))
    monkeypatch.setattr(train.checkpoint, "save", advance(lambda *a: None, 100.0))
    log = train.main(TINY + ["--steps", "25", "--eval-every", "15", "--eval-batches", "1",
                             "--ckpt-dir", str(tmp_path), "--ckpt-every", "12"])
    tokens_per_step = 2 * 16  # --batch 2 x --seq 16 on one process
    assert [e["step"] for e in log["steps"]] == [10, 20, 25]
    assert [e["tok_s"] for e in log["steps"]] == [pytest.approx(tokens_per_step)] * 3
