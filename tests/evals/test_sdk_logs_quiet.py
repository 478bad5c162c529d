"""A drifted recording — the expected CI outcome after editing the agent — is reported by portagent in its own
words only: the eval's output holds no vendor SDK log records (``record``'s verification replays run in
the same workers). Before, each
worker process printed what the SDKs log on a failed request (ADK: "Node execution failed with exception"
and its traceback; openai-agents: "Error getting response"; vcrpy's "How to fix … record_mode=
'new_episodes'" advice, which contradicts ``record --drifted``): hundreds of lines per run. The CLI routed
logs that way already; its eval and record workers (forked from multiprocessing's fork server) did not.

The failing case lives in portagent: with ``PORTAGENT_LOG=warning`` (the documented way to see every
library's records) the same eval prints the vendor records, so they are there to be dropped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _support import run_cli

VENDOR_LINES = ("Traceback", "Node execution failed", "Error getting response", "How to fix")


def _drifted_project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    assert run_cli("init", str(project), "--name", "qa")[0] == 0
    suite = project / "suite.yaml"
    suite.write_text(
        suite.read_text().replace("providers: [openai, claude, adk]", "providers: [openai, adk]")
    )
    code, out, err = run_cli(
        "record", str(suite), "--providers", "openai,adk", "--emulator", "--out", str(project / "cassettes"),
        "--workers", "1",
    )  # fmt: skip
    assert code == 0, out + err
    agent = project / "agent.yaml"
    text = agent.read_text()
    assert "then answer in one sentence." in text
    agent.write_text(text.replace("then answer in one sentence.", "then answer in one short sentence."))
    return project


def _eval(project: Path, log: str | None) -> subprocess.CompletedProcess[str]:
    """The eval as a CI job runs it: a process of its own, whose workers come from its own fork server
    (in this test process, workers forked from a fork server an earlier test started would write to
    that test's captured stderr, and the check would prove nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "PORTAGENT_LOG"}
    if log is not None:
        env["PORTAGENT_LOG"] = log
    return subprocess.run(
        [sys.executable, "-m", "portagent", "eval", str(project / "suite.yaml"), "--replay",
         "--cassettes", str(project / "cassettes"), "--out", str(project / f"results-{log}"),
         "--workers", "1", "--no-progress"],
        capture_output=True, text=True, env=env, cwd=project, timeout=300,
    )  # fmt: skip


def test_a_drifted_eval_prints_no_vendor_logs_unless_portagent_log_asks(tmp_path):
    project = _drifted_project(tmp_path)
    proc = _eval(project, None)
    assert proc.returncode == 1 and "recording drift" in proc.stdout and "--drifted" in proc.stdout, proc
    for line in VENDOR_LINES:
        assert line not in proc.stderr + proc.stdout, (line, proc.stderr[:2000])
    # the same eval with PORTAGENT_LOG=warning prints them: they are there to be dropped
    proc = _eval(project, "warning")
    assert proc.returncode == 1, proc
    assert "Node execution failed" in proc.stderr and "Error getting response" in proc.stderr, proc.stderr[
        :2000
    ]
