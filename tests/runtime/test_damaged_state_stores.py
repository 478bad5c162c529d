"""A damaged state file — the approval cards, the effect ledger, the memory store — is one clear usage error
(exit 2) when a run starts, as ``approvals list`` gives for it, with nothing run and no run folder.

Before, the gateway opened those files only when a tool call first needed them: the error was raised
inside the call, the SDK wrapped it as its own ("openai-agents error: UserError: Error running tool
refund: cannot open the approvals store …"), and the run failed as a provider error (exit 3) — with a
model already asked. The emulator's request log shows no request was sent now.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support import run_cli

from portagent.emulator import load_script, serve


@pytest.mark.parametrize(
    ("name", "what"),
    [("approvals.db", "approvals store"), ("ledger.db", "ledger"), ("memory.db", "memory store")],
)
def test_a_damaged_state_file_stops_the_run_before_it_starts(tmp_path, monkeypatch, name, what):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    assert run_cli("init", str(tmp_path / "p"))[0] == 0
    home = Path(os.environ["PORTAGENT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / name).write_bytes(b"this is not a database" * 50)
    with serve(load_script(tmp_path / "p" / "emulator.yaml")) as emu:
        code, out, err = run_cli(
            "run", str(tmp_path / "p" / "agent.yaml"), "--provider", "openai", "--live",
            "--base-url", emu.base_url, "--input", "Where is my order ORD-7?",
        )  # fmt: skip
        sent = emu.requests()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, out + err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert what in lines[0] and name in lines[0] and "not a database" in lines[0], lines[0]
    assert "status" not in out  # refused before the run: no summary
    assert sent == []  # no model was asked
    assert not (home / "runs").exists()
