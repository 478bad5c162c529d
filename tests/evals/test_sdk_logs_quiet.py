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

from pathlib import Path

import pytest
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
        "record", str(suite), "--providers", "openai,adk", "--emulator", "--out", str(project / "cassettes")
    )
    assert code == 0, out + err
    agent = project / "agent.yaml"
    text = agent.read_text()
    assert "then answer in one sentence." in text
    agent.write_text(text.replace("then answer in one sentence.", "then answer in one short sentence."))
    return project


def _eval(project: Path, out: str) -> tuple[int, str]:
    code, out_text, err_text = run_cli(
        "eval", str(project / "suite.yaml"), "--replay", "--cassettes", str(project / "cassettes"),
        "--out", str(project / out), "--workers", "1", "--no-progress",
    )  # fmt: skip
    return code, out_text + err_text


def test_a_drifted_eval_prints_no_vendor_logs(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("PORTAGENT_LOG", raising=False)
    project = _drifted_project(tmp_path)
    capfd.readouterr()
    code, said = _eval(project, "results")
    printed = capfd.readouterr()
    assert code == 1 and "recording drift" in said and "--drifted" in said, said
    for line in VENDOR_LINES:
        assert line not in printed.err + printed.out, (line, printed.err[:2000])


def test_portagent_log_shows_the_vendor_records_again(tmp_path, capfd, monkeypatch):
    project = _drifted_project(tmp_path)
    monkeypatch.setenv("PORTAGENT_LOG", "warning")
    capfd.readouterr()
    code, said = _eval(project, "results")
    printed = capfd.readouterr()
    assert code == 1, said
    assert "Node execution failed" in printed.err and "Error getting response" in printed.err, printed.err[
        :2000
    ]


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
