"""An eval interrupted while its first workers start (Ctrl-C, a CI cancel) exits, and says so.

The task queues are filled before the first worker starts, and a worker's start waits for the fork server
to finish importing: an interrupt there skipped the pool's clean-up, so the queues' feeder threads stayed
blocked on full pipes no worker would read, and the eval hung at exit, for good (found by a review).
"""

from __future__ import annotations

from pathlib import Path

from _support import REPO, run_probe

PROBE = """
import sys

import portagent.runtime.eval_workers as eval_workers
from portagent.cli import main


def start(self, provider, tasks, env):
    raise KeyboardInterrupt  # Ctrl-C while the first worker starts


eval_workers.Workers.start = start
code = main(["eval", sys.argv[1], "--emulator", "--providers", "openai", "--repeats", "4", "--out", sys.argv[2],
             "--no-progress"])
print("exit", code)
"""


def test_an_eval_interrupted_while_its_workers_start_exits(tmp_path: Path) -> None:
    suite = REPO / "examples" / "support_desk" / "suite.yaml"
    done = run_probe(PROBE, suite, tmp_path / "out", home=tmp_path / "home", timeout=60)  # it hung for good
    assert done.stdout.strip().splitlines()[-1] == "exit 130", (done.stdout, done.stderr[-3000:])
    assert "portagent: interrupted" in done.stderr
