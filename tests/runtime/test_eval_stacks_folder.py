"""The stacks folder of an eval's workers (``eval_stuck.make_stacks``) does not outlive its eval for good.
The pool removes it when it ends; an eval killed outright (SIGKILL: a CI job's timeout) cannot, and one
such folder stayed in the system temp folder per killed eval. The next eval removes the folders whose eval
is gone — told by a lock the kernel releases when a process dies, never by a pid that may be reused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from portagent.runtime.eval_stuck import LEGACY_AGE_S, UNOWNED_AGE_S, make_stacks, remove_stacks, sweep

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no flock: Windows keeps leftovers")


def _made_by_a_process_that_died(base: Path) -> Path:
    """A stacks folder whose eval was killed: made and locked by a process that then ended at once
    (``os._exit``: nothing of its own clean-up ran)."""
    import portagent

    here = str(Path(portagent.__file__).parents[1])
    code = (
        "import os; from portagent.runtime.eval_stuck import make_stacks; "
        f"print(make_stacks({str(base)!r}), flush=True); os._exit(9)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=here),
        capture_output=True,
        text=True,
        timeout=60,
    )
    folder = Path(done.stdout.strip())
    assert done.returncode == 9 and folder.is_dir() and folder.parent == base, done
    return folder


def _aged(folder: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(folder, (then, then))
    return folder


def test_only_the_folders_of_evals_that_are_gone_are_removed(tmp_path: Path) -> None:
    live = Path(make_stacks(str(tmp_path)))  # this process's: its lock is held
    try:
        dead = _made_by_a_process_that_died(tmp_path)
        (dead / "123.stack").write_text("a worker's dump")
        creating = tmp_path / "portagent-stacks-4242-abcd1234"  # made a moment ago, not locked yet
        creating.mkdir()
        unlocked_long = tmp_path / "portagent-stacks-4243-abcd1234"
        unlocked_long.mkdir()
        _aged(unlocked_long, UNOWNED_AGE_S + 60)  # its eval died before it locked the folder
        legacy_old = tmp_path / "portagent-stacks-k2j4h6g8"  # of a version before owner locks
        legacy_old.mkdir()
        _aged(legacy_old, LEGACY_AGE_S + 60)
        legacy_recent = tmp_path / "portagent-stacks-q1w2e3r4"
        legacy_recent.mkdir()
        stranger = tmp_path / "portagent-stacks-notes"  # not a name an eval makes
        stranger.mkdir()
        _aged(stranger, LEGACY_AGE_S + 60)

        removed = sweep(str(tmp_path))

        assert sorted(removed) == sorted(str(p) for p in (dead, unlocked_long, legacy_old))
        assert not dead.exists() and not unlocked_long.exists() and not legacy_old.exists()
        assert live.is_dir() and (live / "owner.lock").read_text() == f"{os.getpid()}\n"
        assert creating.is_dir() and legacy_recent.is_dir() and stranger.is_dir()
        assert sweep(str(tmp_path)) == []  # the live one stays, however often it is asked
    finally:
        remove_stacks(str(live))
    assert not live.exists()
    assert sweep(str(tmp_path / "no-such-folder")) == []


def test_a_new_stacks_folder_sweeps_first(tmp_path: Path) -> None:
    dead = _made_by_a_process_that_died(tmp_path)
    folder = make_stacks(str(tmp_path))
    try:
        assert not dead.exists()
        assert Path(folder).name.startswith(f"portagent-stacks-{os.getpid()}-")
    finally:
        remove_stacks(folder)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow  # starts an eval process with its worker, twice
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_folder_of_a_killed_eval_is_removed_by_the_next_eval(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    import portagent

    data = Path(__file__).parent / "data" / "hang_once"
    temp = tmp_path / "tmp"  # the evals' system temp folder (TMPDIR), so that no other eval's folder is in it
    temp.mkdir()
    here = str(Path(portagent.__file__).parents[1])
    env = dict(
        os.environ,
        PORTAGENT_HOME=str(tmp_path / "home"),
        HANG_ONCE=str(tmp_path / "hung-once"),
        TMPDIR=str(temp),
        PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p),
    )
    argv = [
        sys.executable,
        "-m",
        "portagent",
        "eval",
        str(data / "suite.yaml"),
        "--emulator",
        "--workers",
        "1",
    ]
    argv += ["--out", str(tmp_path / "out"), "--no-progress"]
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "hung-once").exists():  # its worker is in the run (the handler hangs 60 s)
            assert proc.poll() is None, "the eval ended before its run"
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.05)
    finally:
        proc.kill()  # SIGKILL: nothing of the eval's clean-up runs
        proc.wait(timeout=30)
    left = [p for p in temp.iterdir() if p.name.startswith("portagent-stacks-")]
    assert [p.name.split("-")[2] for p in left] == [str(proc.pid)]  # the killed eval's, left behind
    assert any(p.suffix == ".stack" for p in left[0].iterdir())  # its worker's dump file
    deadline = time.monotonic() + 10  # the worker dies with its eval (and lets go of nothing: no lock)
    while any(_alive(int(p.stem)) for p in left[0].glob("*.stack")) and time.monotonic() < deadline:
        time.sleep(0.05)

    done = subprocess.run(
        [*argv, "--resume"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )  # the handler answers at once now
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert [p.name for p in temp.iterdir() if p.name.startswith("portagent-stacks-")] == []
