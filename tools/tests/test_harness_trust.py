"""The harness against an adversary: a killed runner leaves no process, builds are bounded and a dead build's
lock is cleared, and bad command lines get one clear line."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from gpufolio import extension, store
from gpufolio.__main__ import main

HERE = Path(__file__).resolve().parent


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


RUNNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from gpufolio.runner import Plan, run

    if __name__ == "__main__":
        run(Plan(["fused_kernels"], "dry", variant_names={"hangs"}), out_dir=Path(sys.argv[1]), timeout_s=600,
            progress=False)
""")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_runner_killed_during_a_hang_leaves_no_process(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    env = dict(os.environ, GPUFOLIO_BENCH_MODULES="planted_benches",
               PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    runner = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out")], env=env)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # wait until the worker is inside the hanging job
            logs = list((tmp_path / "out").glob("*.log"))
            if logs and "planted hangs" in logs[0].read_text(errors="replace"):
                break
            assert runner.poll() is None, "the runner ended before the hang"
            time.sleep(0.5)
        else:
            pytest.fail("the hanging job never started")
        kids = _children(runner.pid)
        assert kids, "the runner has no worker process"
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.2)
        assert not [k for k in kids if _alive(k)], "a worker or its helper outlived the runner"
    finally:
        if runner.poll() is None:
            runner.kill()


def test_a_torch_lock_with_no_live_builder_is_cleared(tmp_path, capsys):
    (tmp_path / extension.TORCH_LOCK_NAME).write_text("")
    with extension.BuildLock(tmp_path, wait_s=1) as lock:
        assert lock.cleared_stale
    assert not (tmp_path / extension.TORCH_LOCK_NAME).exists()
    assert "stale build lock" in capsys.readouterr().err


HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, str(os.getpid()).encode())
    print("held", flush=True)
    time.sleep(60)
""")


def test_a_live_builder_is_waited_for_then_reported_with_the_clearing_command(tmp_path):
    (tmp_path / extension.TORCH_LOCK_NAME).write_text("")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / extension.LOCK_NAME)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(extension.BuildError) as e, extension.BuildLock(tmp_path, wait_s=1, poll_s=0.1):
            pass
        msg = str(e.value)
        assert f"pid {holder.pid}" in msg and extension.clear_command(tmp_path) in msg
        assert (tmp_path / extension.TORCH_LOCK_NAME).exists()  # a live build's lock is never removed
    finally:
        holder.kill()
        holder.wait()


def test_a_build_over_its_limit_is_killed_with_its_children_and_reported_with_the_log(tmp_path):
    script = "import subprocess, sys, time; print('compiling kernels', flush=True); " \
             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    t0 = time.monotonic()
    with pytest.raises(extension.BuildError) as e:
        extension.run_bounded([sys.executable, "-c", script], tmp_path / "build.log", limit_s=2)
    assert time.monotonic() - t0 < 20
    assert "longer than its limit of 2 s" in str(e.value) and "compiling kernels" in str(e.value)


BUILD_PARENT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from gpufolio import extension

    # a build that starts a compiler of its own (as ninja does), then says both pids
    child = extension.DIE_WITH_PARENT + (
        "import subprocess, sys, time\\n"
        "from pathlib import Path\\n"
        "cc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\\n"
        "Path(sys.argv[1] + '.tmp').write_text(f'{os.getpid()} {cc.pid}')\\n"
        "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\\n"
        "time.sleep(60)\\n")
    extension.run_bounded([sys.executable, "-c", child, sys.argv[1]], Path(sys.argv[2]), limit_s=120,
                          env=dict(os.environ, **{extension.PARENT_ENV: str(os.getpid())}))
""")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_build_dies_with_its_parent_and_takes_its_compilers_along(tmp_path):
    pids = tmp_path / "pids"
    parent = subprocess.Popen([sys.executable, "-c", BUILD_PARENT, str(pids), str(tmp_path / "build.log")])
    try:
        deadline = time.monotonic() + 60
        while not pids.exists():
            assert time.monotonic() < deadline and parent.poll() is None, "the build never started"
            time.sleep(0.1)
        build, compiler = map(int, pids.read_text().split())
        parent.kill()  # as the worker dies when its runner is killed
        parent.wait(timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (_alive(build) or _alive(compiler)):
            time.sleep(0.2)
        assert not _alive(build) and not _alive(compiler), "the build or its compiler outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_failed_build_says_so_with_the_log_tail(tmp_path):
    with pytest.raises(extension.BuildError, match="(?s)exit code 3.*nvcc: error"):
        extension.run_bounded([sys.executable, "-c", "print('nvcc: error'); raise SystemExit(3)"],
                              tmp_path / "build.log", limit_s=30)


def test_the_build_time_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUFOLIO_BUILD_TIMEOUT", "12")
    assert extension.time_limit_s() == 12
    monkeypatch.setenv("GPUFOLIO_BUILD_TIMEOUT", "soon")
    with pytest.raises(extension.BuildError, match="not a number"):
        extension.time_limit_s()


@pytest.mark.parametrize("argv, expected", [
    (["bench", "--project", "fused_kernels", "--variant", "no_such_variant", "--dry-run"], "unknown variant"),
    (["bench", "--project", "fused_kernels", "--bench", "no_such_bench", "--dry-run"], "unknown bench"),
])
def test_unknown_names_are_one_line_and_exit_2(capsys, argv, expected):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]


def test_check_on_a_directory_or_another_file_is_one_line(capsys, tmp_path):
    assert main(["check", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert main(["check", str(other)]) == 2
    assert "not a results file" in capsys.readouterr().err


def test_records_outside_a_project_folder_are_found(tmp_path):
    stray = tmp_path / "projects" / "not_a_project" / "results" / "20261201T000000Z-000000.jsonl"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}\n")
    assert store.stray_result_files(tmp_path) == [stray]


def test_site_refuses_a_missing_results_root_and_stray_records(tmp_path, capsys):
    from gpufolio.site import main as site_main

    assert site_main(["--render-only", "--results-root", str(tmp_path / "nowhere")]) == 2
    assert "no projects/ folder" in capsys.readouterr().err
    stray = tmp_path / "projects" / "not_a_project" / "results" / "20261201T000000Z-000000.jsonl"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}\n")
    assert site_main(["--render-only", "--results-root", str(tmp_path)]) == 2
    assert "not a project" in capsys.readouterr().err
