"""A usage mistake in ``record`` or ``eval`` is answered before the run path is imported: the answer is one
line and exit 2, and it should come at ``--help`` speed, not after a second of imports (``record`` imported
the evals, the planner and the recorder before checking its arguments: ~2 s to refuse ``--address``
without ``--executor ray`` on a loaded machine).

Structural, not timed: the command runs in a fresh interpreter and the test lists what it left in
``sys.modules``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import EXAMPLES, cli_modules, loaded_of

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
    code, modules, err = cli_modules(*argv, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert code == 2 and says in err and "Traceback" not in err, err
    assert loaded_of(modules, RUN_PATH) == []
    assert not (tmp_path / "out").exists()
