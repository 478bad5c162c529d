"""A run that hangs is stopped at its time limit (``eval --run-timeout``), fails with the reason, and the
eval goes on: a CI gate gets one failed run, never an eval blocked forever. The hang is a realistic user
bug: an ``async def`` handler calling ``time.sleep`` blocks the event loop, so the tool's own
``timeout_ms`` never fires. A real eval subprocess with worker processes, the real OpenAI Agents SDK
against the emulator; every wait is bounded (a hang fails the test, it does not hang it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from portagent.cli import main

DATA = Path(__file__).parent / "data" / "hang"
REASON = "the run took longer than its time limit of 3 s (--run-timeout); its worker was stopped"
BOUND_S = 50  # the stuck handler sleeps 60 s: an eval that waits for it fails here


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow  # starts an eval process with its workers
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    "pool",
    [
        pytest.param(["--workers", "1"], id="one-worker"),
        # a spend cap makes the scheduler active: the scheduled pool (runtime.eval_scheduled)
        pytest.param(["--workers", "2", "--max-spend-usd", "100"], id="scheduled"),
    ],
)
def test_a_hung_run_is_stopped_and_the_eval_goes_on(tmp_path: Path, pool: list[str]) -> None:
    pytest.importorskip("agents")
    pids = tmp_path / "pids"
    import portagent

    here = str(Path(portagent.__file__).parents[1])  # the eval runs the portagent under test
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PORTAGENT_HOME=str(tmp_path / "home"), HANG_PIDS=str(pids), PYTHONPATH=path)
    out = tmp_path / "out"
    t0 = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "portagent", "eval", str(DATA / "suite.yaml"), "--emulator"),
            *("--run-timeout", "3", "--out", str(out), "--no-progress", *pool),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    took = time.monotonic() - t0
    # the gate blocks on the run errors alone: exit 3 (evals.gate), never a traceback
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert took < BOUND_S - 5  # two 3 s limits, worker start-ups: far below the handler's 60 s
    assert REASON in done.stdout

    report = json.loads((out / "eval.json").read_text())
    by_case: dict[str, list[dict]] = {}
    for s in json.loads((out / "report.json").read_text())["runs"]:
        by_case.setdefault(s["provenance"]["case_id"], []).append(s)
    assert [s["issue"] for s in by_case["stuck"]] == ["run_error", "run_error"]
    assert all(any(REASON in n for n in s["notes"]) for s in by_case["stuck"])
    assert [s["passed"] for s in by_case["write"]] == [True, True]  # the runs after it were made
    assert sum(REASON in e for e in report["errors"]) == 2
    assert REASON in (out / "report.md").read_text()

    # each stuck run's worker, and the process its handler started, were stopped
    stopped = [int(p) for line in pids.read_text().splitlines() for p in line.split()]
    assert len(stopped) == 4
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in stopped) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in stopped if _alive(p)] == []


@pytest.mark.parametrize("value", ["0", "-5", "abc", "nan", "inf", ""])
@pytest.mark.parametrize("command", ["eval", "demo"])
def test_a_run_timeout_that_is_not_seconds_above_zero_is_refused(
    command: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--run-timeout", value]
    argv += [str(DATA / "suite.yaml"), "--emulator"] if command == "eval" else ["--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--run-timeout must be a number of seconds above 0 (e.g. 120), got {value!r}" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_a_run_timeout_on_ray_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Ray queues a task until a CPU is free: the driver cannot time a run, so the limit is not promised."""
    argv = ["eval", str(DATA / "suite.yaml"), "--emulator", "--run-timeout", "30", "--executor", "ray"]
    assert main(argv) == 2
    assert "--run-timeout is enforced by the local worker pool, not on Ray" in capsys.readouterr().err


def test_the_default_limit_is_the_runs_mode() -> None:
    from dataclasses import dataclass

    from portagent.runtime.eval_pool import RUN_TIMEOUT_S, run_limit_s

    @dataclass
    class Task:
        mode: str

    assert RUN_TIMEOUT_S == {"replay": 120.0, "emulator": 300.0, "live": 900.0}
    assert run_limit_s(Task("live"), None) == 900.0  # type: ignore[arg-type]
    assert run_limit_s(Task("replay"), 7.5) == 7.5  # type: ignore[arg-type]
