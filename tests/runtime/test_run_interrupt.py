"""Ctrl-C during ``portagent run`` (and ``resume``): exit 130 and one line naming the run and the folder it
wrote into, so what it wrote can be found (it used to print only ``interrupted``). The interrupted
commands are real CLI subprocesses, the real OpenAI Agents SDK against portagent's emulator, SIGINT while a
tool handler sleeps (the commands before and after them run in this process); waits are bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import run_cli_as_another_shell

pytest.importorskip("agents")

DATA = Path(__file__).parent / "data" / "crash"
BOUND_S = 90


def _env(tmp_path: Path, hang: Path | None = None) -> dict[str, str]:
    env = dict(
        os.environ, PORTAGENT_HOME=str(tmp_path / "home"), CRASH_EFFECTS=str(tmp_path / "effects.jsonl")
    )
    env.pop("CRASH_HANG", None)
    return env if hang is None else {**env, "CRASH_HANG": str(hang)}


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command before or after the interrupted one: in this process (``run_cli``), another process than
    the interrupted one, as a new shell's would be, without importing the SDK again for each."""
    return run_cli_as_another_shell(tmp_path, _env(tmp_path), *args, unset=("CRASH_HANG",))


def _run_args(*extra: str) -> list[str]:
    return [
        "run", str(DATA / "agent.yaml"), "--provider", "openai", "--emulator", str(DATA / "script.yaml"),
        "--input", "Write note n1.", *extra,
    ]  # fmt: skip


def _interrupted(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """Run the CLI with the crash agent's write handler signalling, then sleeping: SIGINT it there."""
    hang = tmp_path / "in-handler"
    hang.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "portagent", *args],
        env=_env(tmp_path, hang),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + BOUND_S
        while not hang.exists():
            assert proc.poll() is None, f"the run ended before its handler: {proc.communicate()}"
            assert time.monotonic() < deadline, "the handler never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=BOUND_S)
    return proc.returncode, out, err


def _journal_run_id(folder: Path) -> str:
    header = (folder / "journal" / "attempt-1.jsonl").read_text(encoding="utf-8").splitlines()[0]
    return str(json.loads(header)["run_id"])


@pytest.mark.parametrize("out", [True, False], ids=["out", "home"])
def test_ctrl_c_names_the_run_and_its_folder(tmp_path: Path, out: bool) -> None:
    folder = tmp_path / "run-out"
    code, stdout, err = _interrupted(
        tmp_path, *_run_args("--approver", "auto-approve", *(["--out", str(folder)] if out else []))
    )
    assert code == 130 and stdout == "", err
    if not out:
        [folder] = (tmp_path / "home" / "runs").iterdir()
    run_id = _journal_run_id(folder)
    assert err == (
        f"portagent: interrupted run {run_id}; what it wrote so far is in {folder}; "
        "without --idempotency-key it cannot be resumed\n"
    )


def test_ctrl_c_with_an_idempotency_key_says_how_to_resume_and_resume_does(tmp_path: Path) -> None:
    folder = tmp_path / "run-out"
    code, _, err = _interrupted(
        tmp_path, *_run_args("--approver", "auto-approve", "--out", str(folder), "--idempotency-key", "K1")
    )
    run_id = _journal_run_id(folder)
    assert code == 130 and err == (
        f"portagent: interrupted run {run_id}; what it wrote so far is in {folder}; "
        f"'portagent resume {run_id}' continues it\n"
    )
    done = _cli(tmp_path, "resume", run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"status     completed (final_output)  run {run_id}  attempt 2" in done.stdout


def test_ctrl_c_during_resume_names_the_run_too(tmp_path: Path) -> None:
    """A run paused for approval, approved, then interrupted in the handler its resume runs."""
    folder = tmp_path / "run-out"
    paused = _cli(tmp_path, *_run_args("--approver", "defer", "--out", str(folder)))
    assert "waiting_approval" in paused.stdout, paused.stdout + paused.stderr
    approval = next(ln.split()[1] for ln in paused.stdout.splitlines() if ln.startswith("approval "))
    assert _cli(tmp_path, "approvals", "approve", approval).returncode == 0
    run_id = _journal_run_id(folder)
    code, _, err = _interrupted(tmp_path, "resume", run_id)
    assert code == 130 and err == (
        f"portagent: interrupted run {run_id}; what it wrote so far is in {folder}; "
        f"'portagent resume {run_id}' continues it\n"
    )
