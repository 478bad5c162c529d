"""``portagent approvals approve`` names the step that carries on what asked for the card, by where the
card came from: an ``mcp serve`` client calls the tool again (there is no run to resume). Each test
follows the printed step and checks it works. (The command-line run's ``portagent resume RUN`` is
followed in tests/runtime/test_resume_journal.py; the A2A task's step in tests/a2a.)"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from _support import run_cli

DATA = Path(__file__).resolve().parents[1] / "mcp" / "data"


def _call(tmp_path: Path, name: str, args: dict[str, Any]) -> Any:
    """One ``tools/call`` through a real MCP client against an in-process ``mcp serve`` session."""
    from mcp import Client

    from portagent.mcp.server import GovernedServer, load_target

    sys.path.insert(0, str(DATA))
    governed = GovernedServer(
        load_target(DATA / "sms_tools.yaml", DATA / "sms_policy.yaml"), trace_path=tmp_path / "trace.jsonl"
    )

    async def go() -> Any:
        governed.start("in-process")
        try:
            async with Client(governed.build()) as client:
                return await client.call_tool(name, args)
        finally:
            governed.stop()

    return asyncio.run(asyncio.wait_for(go(), 30))


def test_an_mcp_serve_card_says_to_call_the_tool_again_and_that_works(tmp_path: Path) -> None:
    args = {"to": "+34600111222", "text": "Your DNI is missing"}
    pending = _call(tmp_path, "send_sms", args)
    approval_id = pending.structured_content["approval_id"]
    code, out, err = run_cli("approvals", "approve", approval_id, "--reviewer", "ana")
    assert code == 0, err
    assert "the MCP client calls send_sms again with the same arguments" in out, out
    assert "portagent resume" not in out  # the serve session is no run: resume refuses it
    done = _call(tmp_path, "send_sms", args)  # the step, followed
    assert not done.is_error and done.structured_content["sent"] is True
