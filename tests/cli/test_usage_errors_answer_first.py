"""A usage mistake in ``record`` or ``eval`` is answered before the run path is imported: the answer is one
line and exit 2, and it should come at ``--help`` speed, not after a second of imports (``record`` imported
the evals, the planner and the recorder before checking its arguments: ~2 s to refuse ``--address``
without ``--executor ray`` on a loaded machine).

Structural, not timed: the command runs in a fresh interpreter and the test lists what it left in
``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import EXAMPLES

PROBE = textwrap.dedent(
    """
    import json, sys
    from portagent.cli import main

    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
    print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
    """
)

RUN_PATH = (
    "portagent.evals",
    "portagent.runtime.eval_plan",
    "portagent.runtime.eval_execute",
    "portagent.runtime.record_tasks",
    "portagent.runtime.runner",
    "portagent.adapters.base",
    "agents",
    "google.adk",
    "claude_agent_sdk",
)
SUITE = str(EXAMPLES / "support_desk" / "suite.yaml")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["record", SUITE, "--emulator", "--address", "ray://x"], "--address names a Ray cluster"),
        (["record", SUITE, "--emulator", "--workers", "0"], "--workers must be at least 1"),
        (["record", SUITE, "--emulator", "--repeats", "0"], "--repeats must be at least 1"),
        (["record", "no-such-suite.yaml", "--emulator"], "no such suite or agent spec"),
        (["record", SUITE, "--emulator", "--max-spend-usd", "-1"], "--max-spend-usd"),
        (["record", SUITE, "--emulator", "no-such-script.yaml"], "emulator script not found"),
        (["record", SUITE, "--emulator", "--input", "hello"], "--input is for recording an agent spec"),
        (["eval", SUITE, "--replay", "--address", "ray://x"], "--address names a Ray cluster"),
        (["eval", SUITE, "--replay", "--workers", "0"], "--workers must be at least 1"),
        (["eval", "no-such-suite.yaml", "--replay"], "suite file not found"),
    ],
    ids=[
        "record-address",
        "record-workers",
        "record-repeats",
        "record-no-suite",
        "record-spend",
        "record-no-script",
        "record-input-with-suite",
        "eval-address",
        "eval-workers",
        "eval-no-suite",
    ],
)
def test_a_usage_mistake_is_answered_before_the_run_path_is_imported(
    argv: list[str], says: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["exit"] == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    loaded = [m for m in seen["modules"] if any(m == n or m.startswith(n + ".") for n in RUN_PATH)]
    assert loaded == []
    assert not (tmp_path / "out").exists()
