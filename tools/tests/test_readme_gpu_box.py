"""The README's "On a GPU box" commands are the ones tools/lab/fresh_box_check.sh runs on the offline box, so the
check verifies what a new user types (the offline box has no ``nox`` script on PATH: ``python3 -m nox``)."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def gpu_box_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## On a GPU box", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    lines = [line.split("  #", 1)[0].strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line]


def test_the_check_script_runs_the_readme_commands():
    script = (REPO / "tools" / "lab" / "fresh_box_check.sh").read_text(encoding="utf-8")
    flat = " ".join(script.replace("\\\n", " ").split())
    commands = gpu_box_commands()
    bench = [c for c in commands if c.startswith("nox -s bench") or c.startswith("nox -s tests_gpu")]
    assert len(bench) == 3
    for c in bench:
        assert "python3 -m " + c in flat, c
    offline = [c for c in commands if c.startswith("python3 -m pip install") or c.startswith("python3 -m nox")]
    assert len(offline) == 2
    for c in offline:
        assert c in flat, c
    compare = next(c for c in commands if c.startswith(".nox/bench/bin/python -m gpufolio compare latest~1"))
    assert compare in flat
