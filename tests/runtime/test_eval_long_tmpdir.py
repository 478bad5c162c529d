"""An eval works whatever the length of ``TMPDIR``.

On Python 3.11 the workers' fork server listens on a Unix socket in multiprocessing's temp folder, made under
``TMPDIR``; a socket path is limited to 107 bytes, so with a deep ``TMPDIR`` (a CI runner's work folder, a
macOS user folder) every eval ended in a traceback, "AF_UNIX path too long". The eval now gives
multiprocessing a short system folder in that case, as Python 3.12 does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _support import REPO

DATA = Path(__file__).parent / "data" / "crash"


def test_an_eval_runs_with_a_deep_tmpdir(tmp_path: Path) -> None:
    deep = tmp_path / ("a-deep-temporary-folder-" * 4)
    deep.mkdir()
    assert len(str(deep)) > 107 - len("/pymp-12345678/listener-12345678")
    env = dict(os.environ, TMPDIR=str(deep), PORTAGENT_HOME=str(tmp_path / "home"))
    argv = [sys.executable, "-m", "portagent", "eval", str(DATA / "suite.yaml"), "--emulator"]
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "out"), "--workers", "2", "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "12 runs in" in done.stdout, done.stdout
    assert not list(deep.glob("pymp-*"))  # the folder it used instead was not under TMPDIR
