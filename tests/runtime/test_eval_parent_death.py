"""``portagent eval`` killed with SIGKILL (what a CI job timeout does) takes its pool workers with it,
and no run starts after it is gone (issue 14, finding 2). A real eval subprocess with worker processes,
the real OpenAI Agents SDK against the emulator; every wait is bounded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("agents")

DATA = Path(__file__).parent / "data" / "crash"
BOUND_S = 90


def _ours(marker: str) -> list[int]:
    """Live processes started with our marker in their environment (the eval, its fork server, workers)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in env and stat.rsplit(")", 1)[1].split()[0] != "Z":
            pids.append(int(d.name))
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_eval_kills_its_workers_and_no_run_starts_after(tmp_path: Path) -> None:
    effects = tmp_path / "effects.jsonl"
    env = dict(
        os.environ, PORTAGENT_HOME=str(tmp_path / "home"), CRASH_EFFECTS=str(effects), CRASH_PAUSE_S="0.3"
    )
    argv = [sys.executable, "-m", "portagent", "eval", str(DATA / "suite.yaml"), "--emulator"]
    proc = subprocess.Popen(
        [*argv, "--out", str(tmp_path / "out"), "--workers", "2", "--no-progress"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker = f"CRASH_EFFECTS={effects}"
    try:
        deadline = time.monotonic() + BOUND_S
        while not list((tmp_path / "out" / "runs").rglob("run.json")):  # one run finished, others go on
            assert proc.poll() is None, "the eval ended before its first run"
            assert time.monotonic() < deadline, "no run finished"
            time.sleep(0.05)
        assert len(_ours(marker)) >= 3  # the eval, the fork server, at least one worker
    finally:
        proc.kill()  # SIGKILL the eval process only, never its group
        proc.wait(timeout=BOUND_S)
    deadline = time.monotonic() + 10
    while _ours(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ours(marker) == [], "processes outlived the killed eval"
    made = effects.read_text().count("\n")
    time.sleep(1.5)
    assert effects.read_text().count("\n") == made  # nothing ran after everything died
    assert made < 12  # the eval was cut short, not finished by orphans

    # --resume into the same --out: the runs it finished are kept, only the others run
    kept = len(list((tmp_path / "out" / "runs").rglob("run.json")))
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "out"), "--workers", "2", "--no-progress", "--resume"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=BOUND_S * 2,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert kept >= 1
    assert f"resumed: {kept} finished run(s) kept, {12 - kept} run" in done.stderr
    assert effects.read_text().count("\n") == made + 12 - kept  # finished runs were not made again
    assert len(list((tmp_path / "out" / "runs").rglob("run.json"))) == 12
    assert "12/12" in done.stdout and (tmp_path / "out" / "eval.json").is_file()


def test_resume_usage_errors(tmp_path: Path) -> None:
    from _support import run_cli

    suite = str(DATA / "suite.yaml")
    code, _, err = run_cli("eval", suite, "--emulator", "--resume")
    assert code == 2 and "--resume continues the eval in --out DIR" in err
    code, _, err = run_cli(
        "eval", suite, "--emulator", "--resume", "--overwrite", "--out", str(tmp_path / "o")
    )
    assert code == 2 and "choose one" in err
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    code, _, err = run_cli("eval", suite, "--emulator", "--resume", "--out", str(stranger))
    assert code == 2 and "not a portagent results folder" in err
    assert (stranger / "notes.txt").read_text() == "mine"
