"""The run journal keeps no credential a base URL carries.

QA: ``--base-url http://u:PASS@host/v1`` put ``PASS`` in the journal's header (the invocation's
``base_url``) and in every exchange's ``uri``, while ``run.json`` masked it. Real runs against the
emulator (on a free port, the password in the URL's userinfo) on every provider; then the run is resumed
with the real URL the caller gives again, and must replay from the masked journal. Query credentials are
checked on the journal itself: a base URL's query never reaches an exchange's ``uri`` (the SDKs put
their own query there), so the query a replay matches is the one the journal wrote, masked the same way.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _support import portagent_home, run_cli
from note_agent import note_turns, sent, write_note_agent

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.emulator import load_script, serve
from portagent.recording.journal import Kept, RunJournal, shown_uri
from portagent.runtime.runner import RunConfig, arun_full

PASSWORD = "Zk81mQp0Xw2Lr7Ty"
INPUT = "Send the plain note."
NOTE = "the parcel left on Monday"
PROVIDERS = [pytest.param(p, marks=pytest.mark.slow) if p == "claude" else p for p in REGISTRY]


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    models = {
        "openai": "gpt-4.1-mini",
        "claude": "claude-sonnet-4-6",
        "anthropic": "claude-sonnet-4-6",
        "adk": "gemini-2.5-flash",
        "langgraph": "openai:gpt-4.1-mini",
    }
    conversation = {"name": "plain", "match": {"first_user": INPUT}, "turns": note_turns(NOTE)}
    return write_note_agent(tmp_path / "agent", "journal_url_tools", models, [conversation], monkeypatch)


def _with_credentials(base_url: str) -> str:
    return base_url.replace("://", f"://u:{PASSWORD}@", 1)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_base_url_credentials_stay_out_of_the_journal_and_resume_replays(
    agent: Path, provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = REGISTRY[provider]
    monkeypatch.setenv(info.key_env, info.dummy_key)
    monkeypatch.delenv(info.base_url_env, raising=False)
    out = tmp_path / "out"
    with serve(load_script(agent / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        url = _with_credentials(emu.base_url)
        code, stdout, stderr = run_cli(
            "run", str(agent / "agent.yaml"), "--provider", provider, "--live", "--base-url", url,
            "--input", INPUT, "--approver", "defer", "--idempotency-key", "k-url", "--out", str(out),
        )  # fmt: skip
        assert code == 0 and "waiting_approval" in stdout, stdout + stderr
        journal = out / "journal" / "attempt-1.jsonl"
        lines = [json.loads(ln) for ln in journal.read_text().splitlines()]
        assert PASSWORD not in journal.read_text()
        header, exchanges = lines[0], [ln for ln in lines[1:] if "request" in ln]
        assert header["invocation"]["endpoint"]["base_url"].startswith("http://u:[REDACTED:")
        assert exchanges and all("@" not in ln["request"]["uri"] for ln in exchanges)
        assert all(ln["request"]["uri"].startswith(emu.base_url) for ln in exchanges)
        approval_id = next(ln.split()[1] for ln in stdout.splitlines() if ln.startswith("approval "))
        assert run_cli("approvals", "approve", approval_id)[0] == 0

        # resumed with the URL the caller has (credentials and all), from the journal that has none
        before = len(emu.requests())
        config = RunConfig(
            endpoint=Endpoint(source="live", base_url=url, api_key=info.dummy_key),
            approver="defer",
            out_dir=out,
        )
        request = RunRequest(input=INPUT, provider=provider, idempotency_key="k-url")
        result = asyncio.run(arun_full(load_agent(agent / "agent.yaml"), request, config)).result
        assert result.status == "completed", result
    record = json.loads((out / "run.json").read_text())
    first, second = record["attempts"][0]["journal"], record["attempts"][1]["journal"]
    assert second["replayed"] == first["paused_after"] - first.get("failed", 0) >= 1
    assert "unplayed" not in second and "not_in_journal" not in second
    assert sent(agent) == [NOTE]
    assert len(emu.requests()) > before  # the run went on against the endpoint after the replay
    for path in out.rglob("*"):
        if path.is_file():
            assert PASSWORD not in path.read_text(errors="replace"), path


def test_query_credentials_are_masked_and_still_match_on_replay(tmp_path: Path) -> None:
    """A credential in a request's query (Gemini's ``?key=``, a signed ``?sig=``): dropped or masked in
    the ``uri`` kept, and the same request still finds its kept answer when replayed."""
    uri = "http://u:pw-9f8e7d6c5b4a@127.0.0.1:9/v1beta/models/m:stream?alt=sse&sig=Qm7Xr2Lp9Kd4Wz8N&key=k1234567"
    kept_uri = shown_uri(uri)
    assert "pw-9f8e7d6c5b4a" not in kept_uri and "Qm7Xr2Lp9Kd4Wz8N" not in kept_uri
    assert "k1234567" not in kept_uri and "@" not in kept_uri and "alt=sse" in kept_uri
    assert kept_uri.startswith("http://127.0.0.1:9/v1beta/models/m:stream?")

    from urllib.parse import urlsplit

    parts = urlsplit(kept_uri)
    response = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "data: {}\n\n"}}
    kept = Kept(0, "POST", parts.path, parts.query, None, response, {"request": {"uri": kept_uri}})
    journal = RunJournal(path=tmp_path / "journal" / "attempt-2.jsonl", header={}, replay=[kept]).open()
    served = journal.take("POST", parts.path, urlsplit(uri).query, b"", journal.next_seq())
    assert served is not None and served["body"]["string"] == b"data: {}\n\n"
    assert journal.unmatched == []


def test_an_unreachable_endpoint_is_noted_without_its_credentials(tmp_path: Path) -> None:
    journal = RunJournal(path=tmp_path / "journal" / "attempt-1.jsonl", header={"run_id": "r"}).open()
    journal.failed(0, f"http://u:{PASSWORD}@127.0.0.1:9 unreachable: [Errno 111] Connection refused")
    journal.failed(1, "https://ghs_token1234567890abcdefXYZ@host.example unreachable: timed out")
    journal.close(tmp_path)
    text = (tmp_path / "journal" / "attempt-1.jsonl").read_text()
    assert PASSWORD not in text and "ghs_token" not in text
    assert "http://127.0.0.1:9 unreachable" in text and "https://host.example unreachable" in text
