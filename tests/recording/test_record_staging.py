"""``record`` stages every recording in a hidden folder and moves it into place only when it is complete
(and verified by a replay); staging folders a killed recording left are removed on the next start
(issue 14, finding 9). A real ``portagent record`` subprocess killed with SIGKILL; bounded waits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import run_cli

from portagent.contracts.errors import RecordingError
from portagent.runtime.record import clean_staging, place
from portagent.tools.ledger import start_identity

DATA = Path(__file__).resolve().parents[1] / "runtime" / "data" / "crash"
BOUND_S = 90


def test_clean_staging_removes_only_dead_recordings_folders(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=60)
    dead = tmp_path / f".r0.stage-{p.pid}-x.abc123"
    reused = tmp_path / ".r1.stage-1-0.0.abc123"  # pid 1 lives, but it is another process (start identity)
    legacy = tmp_path / ".r2.k3j_9abz"  # a mkdtemp folder of a version before staging tags
    live = tmp_path / f".r3.stage-{os.getpid()}-{start_identity(os.getpid()) or ''}.abc123"
    other = tmp_path / ".keep-me"
    final = tmp_path / "r0"
    for d in (dead, reused, legacy, live, other, final):
        d.mkdir()
    removed = clean_staging(tmp_path)
    assert sorted(removed) == sorted([dead, reused, legacy])
    assert live.is_dir() and other.is_dir() and final.is_dir()


def test_an_incomplete_recording_is_never_moved_into_place(tmp_path: Path) -> None:
    staging = tmp_path / ".r0.stage-1-0.xyz"
    staging.mkdir()
    (staging / "run.json").write_text("{}")
    (staging / "trace.jsonl").write_text("")
    folder = tmp_path / "r0"
    folder.mkdir()
    (folder / "cassette.yaml").write_text("earlier recording")
    with pytest.raises(RecordingError, match=r"incomplete \(cassette.yaml missing\)"):
        place(staging, folder, "openai")
    assert not staging.exists()
    assert (folder / "cassette.yaml").read_text() == "earlier recording"  # the earlier one is kept
    claude = tmp_path / ".r1.stage-1-0.xyz"
    claude.mkdir()
    for f in ("run.json", "trace.jsonl", "cassette.yaml"):
        (claude / f).write_text("x")
    with pytest.raises(RecordingError, match=r"transport.jsonl missing"):
        place(claude, tmp_path / "r1", "claude")
    assert not (tmp_path / "r1").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL a subprocess")
def test_a_killed_recording_leaves_no_folder_and_the_next_record_cleans_up(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    hang = tmp_path / "in-handler"
    env = dict(os.environ, PORTAGENT_HOME=str(tmp_path / "home"), CRASH_EFFECTS=str(tmp_path / "fx.jsonl"))
    argv = [
        sys.executable,
        "-m",
        "portagent",
        "record",
        str(DATA / "agent.yaml"),
        "--providers",
        "openai",
        "--emulator",
        str(DATA / "script.yaml"),
        "--case",
        "write",
        "--input",
        "Write note n1.",
        "--approver",
        "auto-approve",
        "--out",
        str(tmp_path / "cassettes"),
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(
        argv, env={**env, "CRASH_HANG": str(hang)}, cwd=tmp_path, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + BOUND_S
        while not hang.exists():
            assert proc.poll() is None and time.monotonic() < deadline, (
                "the recording never reached its handler"
            )
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(timeout=BOUND_S)
    folder = tmp_path / "cassettes" / "adhoc" / "crashy@0.1.0" / "write" / "openai"
    if not folder.exists():  # the layout names the agent with its version
        folder = next((tmp_path / "cassettes" / "adhoc").glob("*/write/openai"))
    assert [d.name for d in folder.iterdir() if d.name.startswith(".")]  # the staging folder it left
    assert not (folder / "r0").exists()  # nothing half-written in place

    # the next record: in this process (what it proves is its clean-up, not a process of its own)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        mp.setenv("PORTAGENT_HOME", env["PORTAGENT_HOME"])
        mp.setenv("CRASH_EFFECTS", env["CRASH_EFFECTS"])
        mp.delenv("CRASH_HANG", raising=False)
        code, out, err = run_cli(*argv[3:])
    assert code == 0, out + err
    assert "replays cleanly" in out
    assert [d.name for d in folder.iterdir()] == ["r0"]  # the dead recording's staging folder is gone
    assert sorted(f.name for f in (folder / "r0").iterdir()) == ["cassette.yaml", "run.json", "trace.jsonl"]


def test_ctrl_c_during_record_exits_130_and_leaves_only_whole_recordings(tmp_path: Path) -> None:
    """SIGINT while ``record`` is between and inside recordings: it stops (exit 130, bounded — it used to
    hang at exit on the emulator it had left open), and the cassette tree holds only complete recordings:
    no staging folder, no empty layout folder of a recording never made."""
    import shutil
    import signal

    pytest.importorskip("agents")
    from _support import EXAMPLES

    shutil.copytree(EXAMPLES / "support_desk", tmp_path / "sd", ignore=shutil.ignore_patterns("__pycache__"))
    argv = [sys.executable, "-m", "portagent", "record", str(tmp_path / "sd" / "suite.yaml"), "--emulator"]
    argv += ["--providers", "openai", "--out", str(tmp_path / "rec"), "--workers", "1", "--no-verify"]
    env = dict(os.environ, PORTAGENT_HOME=str(tmp_path / "home"), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + BOUND_S
        seen = 0
        while seen < 2:  # two recordings made: the third is under way
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, "record never got going"
            seen += line.startswith("recorded")
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=BOUND_S)
    assert code == 130, proc.stderr.read() if proc.stderr else ""
    runs = [p for p in (tmp_path / "rec").rglob("r*") if p.is_dir() and p.name[1:].isdigit()]
    assert len(runs) >= 2
    for r in runs:  # every folder in place is a whole recording
        assert sorted(f.name for f in r.iterdir()) == ["cassette.yaml", "run.json", "trace.jsonl"], r
    every = [p for p in (tmp_path / "rec").rglob("*") if p.is_dir()]
    tree = sorted(str(p.relative_to(tmp_path)) for p in every)  # shown when an assertion fails
    assert not [p for p in every if p.name.startswith(".")], tree  # no staging folder
    assert not [p for p in every if not any(p.iterdir())], tree  # no empty folder
