"""The loss curve on real text: byte_25m (byte-level, ~25M parameters) on Python's standard library source, one
GPU, through the same FSDP2 code path as the headline (a 1-rank process group).

    python -m gpufolio_projects.fsdp_mfu.lab.loss_curve --out projects/fsdp_mfu/results [--steps 400]

Writes ``loss_curve.json`` (every 10th step's train loss, val loss at step 0 and every 50 steps, tok/s and
MFU, the config, the environment stamp and provenance) and ``loss_curve.png``. Sized for a GPU slot of about a
minute: eager (no compile time to pay), B=32 x T=512 bytes per step, and ``--max-seconds`` stops training
early (then evaluates and writes) if the machine is slower than planned.
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from .. import train


def stamp() -> dict:
    """Environment and provenance from the harness, when it is importable (it always is on the GPU box)."""
    try:
        from gpufolio.provenance import git_info, source_digest
        from gpufolio.stamp import collect_env

        return {"env": collect_env(), "git": dict(git_info(), source_digest=source_digest("fsdp_mfu"))}
    except Exception as e:  # noqa: BLE001 - a stamp failure must not lose the curve; it is recorded instead
        return {"env": None, "git": None, "stamp_error": f"{type(e).__name__}: {e}"}


def plot(log: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([s["step"] for s in log["steps"]], [s["loss"] for s in log["steps"]], label="train")
    ax.plot([v["step"] for v in log["val"]], [v["loss"] for v in log["val"]], "o-", label="val (held-out files)")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / byte)")
    ax.set_title(f"{log['model']} on the Python stdlib ({log.get('device')}, {log['train_config']['mode']}), "
                 f"B={log['batch_per_rank']} T={log['seq']}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--model", default="byte_25m")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--max-seconds", type=float, default=40.0,
                   help="stop training this long after train.py starts (its --max-seconds)")
    p.add_argument("--mode", default="fsdp2", help="fsdp2 (default: the headline's code path, one rank), single, ddp")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more train.py flags")
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    log = train.main(["--mode", a.mode, "--model", a.model, "--data", "stdlib", "--batch", str(a.batch), "--seq", str(a.seq),
                      "--steps", str(a.steps), "--eval-every", "50", "--eval-batches", "8", "--lr", str(a.lr),
                      "--warmup-steps", "50", "--decay-steps", str(max(a.steps - 50, 1)), "--no-progress",
                      "--max-seconds", str(a.max_seconds), "--log-json", str(a.out / "loss_curve.partial.json"),
                      *a.extra])
    log.update(stamp(), created_at=datetime.now(UTC).isoformat(timespec="seconds"),
               command="python -m gpufolio_projects.fsdp_mfu.lab.loss_curve " + " ".join(sys.argv[1:] if argv is None else argv))
    (a.out / "loss_curve.json").write_text(json.dumps(log, indent=1, default=str) + "\n")
    plot(log, a.out / "loss_curve.png")
    (a.out / "loss_curve.partial.json").unlink(missing_ok=True)
    first, last = log["val"][0], log["val"][-1]
    print(f"loss_curve: val loss {first['loss']:.3f} (step {first['step']}) -> {last['loss']:.3f} "
          f"(step {last['step']}); wrote {a.out}")


if __name__ == "__main__":
    main()
