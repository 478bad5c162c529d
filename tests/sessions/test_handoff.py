"""Compaction into a verifiable handoff package (issue 16 part 4) and the ch. 04 metrics.

A thread of three real runs (openai-agents, ADK, Claude Code against the emulator: a memory stored, recalled,
and a write the approver rejected) is compacted from its traces. The package is complete and every claim is
backed; a claim with no event behind it — an action that never happened, an outcome the trace contradicts, a
statement where only events count — fails, naming the claim.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _support import run_cli

from portagent.adapters.port import Endpoint, RunOptions
from portagent.contracts.handoff import ActionClaim, ArtifactRef, Claim
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.evals import context_metrics as cm
from portagent.runtime.runner import RunConfig
from portagent.runtime.session_store import SqliteSessionStore
from portagent.runtime.sessions import arun_in_session, session_events
from portagent.tracing.handoff import compact, package_tokens, validate, verify

MEMORY = Path(__file__).resolve().parents[1] / "memory" / "data"
DUMMY_KEYS = {
    "openai": "sk-portagent-dummy",
    "claude": "sk-ant-portagent-dummy",
    "adk": "portagent-dummy-key",
}
DONE = ["the user's contact preference is stored and used"]


class At(FixedClock):
    def __init__(self, when: datetime) -> None:
        super().__init__()
        self.when = when

    def now(self) -> datetime:
        return self.when


@pytest.fixture(scope="module")
def thread(tmp_path_factory):
    from portagent.emulator import load_script, serve

    tmp = tmp_path_factory.mktemp("handoff")
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(tmp / "home")
    try:
        with serve(load_script(MEMORY / "script.yaml")) as emu:
            for n, (provider, text) in enumerate(
                [
                    ("openai", "I prefer email."),
                    ("claude", "How should you contact me?"),
                    ("adk", "Remember the refund rule."),
                ]
            ):
                config = RunConfig(
                    endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[provider]),
                    ids=IdFactory(f"handoff-{n}"),
                    options=RunOptions(workdir=tmp / f"work-{n}"),
                    persist=True,
                )
                request = RunRequest(input=text, provider=provider, session_id="h", actor="ana")
                out = asyncio.run(
                    asyncio.wait_for(arun_in_session(MEMORY / "keeper.yaml", request, config), 120)
                )
                assert out.result.status == "completed", out.result
        store = SqliteSessionStore()
        turns = store.turns("h")
        store.close()
        events, paths = session_events(turns)
    finally:
        if old is None:
            os.environ.pop("PORTAGENT_HOME", None)
        else:
            os.environ["PORTAGENT_HOME"] = old
    return tmp / "home", events, paths


def package(thread: Any, **kw: Any) -> Any:
    _, events, paths = thread
    return compact(
        events,
        owner="ana",
        clock=At(datetime(2026, 6, 1, tzinfo=UTC)),
        done_when=DONE,
        trace_refs=paths,
        **kw,
    )


def test_compaction_is_complete_and_backed_by_the_trace(thread):
    _, events, _ = thread
    h = package(thread)
    assert validate(h) == [] and verify(h, events) == []
    assert cm.handoff_completeness(h) == 1.0
    assert h.goal.text == "Remember the refund rule."
    assert [a.outcome for a in h.actions] == ["ok", "ok", "approval_rejected"]
    assert [a.tool for a in h.actions] == ["remember", "recall", "remember"]
    assert any(a.kind == "effect" for a in h.artifacts) and [s.ref.split(":")[0] for s in h.sources] == [
        "memory"
    ]
    assert h.decisions[0].decision.startswith("rejected remember") and "auto-deny" in h.decisions[0].reason
    assert "default:reversible_write" in h.limits[0].text
    assert h.do_not_redo and "approval_rejected" in h.do_not_redo[0].text
    assert h.next_step is not None and h.next_step.text.startswith("continue from the last answer")
    assert h.created_at == "2026-06-01T00:00:00.000Z"  # the injected clock


def test_ids_are_deterministic_and_edits_are_caught(thread):
    a = package(thread)
    _, events, paths = thread
    b = compact(
        events, owner="ana", clock=At(datetime(2027, 1, 1, tzinfo=UTC)), done_when=DONE, trace_refs=paths
    )
    assert a.handoff_id == b.handoff_id and a.created_at != b.created_at
    edited = a.model_copy(update={"goal": Claim(text="Something else", evidence=a.goal.evidence)})
    assert any("does not match its content" in p for p in validate(edited))
    assert any(p.startswith("goal: no run.started with this input") for p in verify(edited, events))


def _with(h: Any, **update: Any) -> Any:
    from portagent.tracing.handoff import handoff_id

    body = {
        **h.model_dump(),
        **{k: [x.model_dump() for x in v] if isinstance(v, list) else v for k, v in update.items()},
    }
    body["handoff_id"] = handoff_id(body)
    return type(h).model_validate(body)


def test_an_action_absent_from_the_trace_is_rejected(thread):
    _, events, _ = thread
    h = package(thread)
    run = h.runs[0]
    ghost = ActionClaim(tool="send_email", call_id="call_9", run_id=run, outcome="ok", evidence=[f"{run}#99"])
    problems = verify(_with(h, actions=[*h.actions, ghost]), events)
    assert problems == [f"actions.3: {run}#99 is not in the trace"]
    # an existing event that is not that call
    posing = ghost.model_copy(update={"evidence": [f"{run}#0"]})
    assert verify(_with(h, actions=[*h.actions, posing]), events) == [
        f"actions.3: no tool.call of send_email call_9 in run {run}"
    ]
    # a statement cannot stand for an action
    stated = ghost.model_copy(update={"evidence": ["stated:ana"]})
    assert "actions.3: must point at trace events, not a statement" in validate(
        _with(h, actions=[*h.actions, stated])
    )


def test_an_outcome_the_trace_contradicts_is_rejected(thread):
    _, events, _ = thread
    h = package(thread)
    lie = h.actions[2].model_copy(update={"outcome": "ok"})
    assert verify(_with(h, actions=[*h.actions[:2], lie]), events) == [
        "actions.2: claims ok, the trace says approval_rejected"
    ]
    fake = ArtifactRef(ref="effect:eff_000000000000", kind="effect", evidence=h.artifacts[0].evidence)
    assert verify(_with(h, artifacts=[*h.artifacts, fake]), events) == [
        f"artifacts.{len(h.artifacts)}: no tool.result with effect:eff_000000000000"
    ]


def test_incomplete_package_names_what_is_missing(thread):
    """The book's example: a goal without closing criteria, decisions, limits or next step is incomplete —
    and, fixed, decisions and limits are checked too."""
    _, events, _ = thread
    first_run = [e for e in events if e.run_id == events[0].run_id]  # the stored preference: nothing refused
    h = compact(first_run, owner="ana", clock=FixedClock())
    problems = validate(h)
    assert "missing decisions" in problems and "missing limits" in problems
    assert "missing done_when (closing criteria)" in problems
    stated = compact(
        first_run,
        owner="ana",
        clock=FixedClock(),
        done_when=DONE,
        limits=["email only to the user's own address"],
        decisions=[("keep email as the channel", "the user said so")],
    )
    assert validate(stated) == [] and verify(stated, first_run) == []


def test_a_tiny_package_that_lost_the_goal_fails(thread):
    h = package(thread)
    lost = _with(h, goal=None)
    assert "missing goal" in validate(lost)
    history = sum(len(json.dumps(e.model_dump(mode="json"))) for e in thread[1]) // 4
    assert cm.ratio_compaction(package_tokens(lost), history) < 0.5  # small — and still a failure


# --- the CLI --------------------------------------------------------------------------------------------


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_cli_export_handoff_and_check(thread, tmp_path, monkeypatch):
    home, _, _ = thread
    monkeypatch.setenv("PORTAGENT_HOME", str(home))
    out = tmp_path / "handoff.json"
    code, text, err = run_cli(
        "sessions", "export", "h", "--handoff", "--owner", "ana", "--done-when", DONE[0], "--out", str(out)
    )
    assert code == 0, err
    assert "3 runs" in text
    code, text, err = run_cli("sessions", "check-handoff", str(out))
    assert code == 0 and "every claim is backed" in text, err

    doc = json.loads(out.read_text())
    doc["actions"].append(
        {
            "tool": "send_email",
            "call_id": "call_9",
            "run_id": doc["runs"][0],
            "outcome": "ok",
            "evidence": [f"{doc['runs'][0]}#99"],
        }
    )
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc))
    code, _, err = run_cli("sessions", "check-handoff", str(tampered))
    assert code == 1 and "is not in the trace" in one_line(err) and "does not match its content" in err

    missing = tmp_path / "missing.json"
    code, _, err = run_cli("sessions", "export", "h", "--handoff", "--owner", "ana", "--out", str(missing))
    assert code == 1 and "missing done_when" in one_line(err) and not missing.exists()
    code, _, err = run_cli("sessions", "export", "h", "--handoff", "--done-when", "x")
    assert code == 2 and "--owner" in one_line(err)
    code, _, err = run_cli("sessions", "export", "h", "--handoff", "--owner", "a", "--decision", "no reason")
    assert code == 2 and "DECISION: REASON" in one_line(err)
    (tmp_path / "other.json").write_text('{"kind": "portagent-session"}')
    code, _, err = run_cli("sessions", "check-handoff", str(tmp_path / "other.json"))
    assert code == 2 and "not a handoff package" in one_line(err)


# --- metrics (the chapter's worked examples) --------------------------------------------------------------


def test_metrics_worked_examples():
    assert cm.memory_precision_at_k(["a", "b", "c", "d", "x"], {"a", "b", "c", "d"}, 5) == 0.8
    assert (
        cm.memory_recall_at_k(["a", "x"], {"a", "b"}, 2) == 0.5 and cm.memory_recall_at_k([], set(), 3) == 1.0
    )
    assert cm.resume_success_rate([True] * 31 + [False] * 9) == 0.775
    assert cm.ratio_compaction(1800, 28000) == pytest.approx(0.064, abs=0.001)
    assert cm.token_saving(10000, 6000) == 0.4
    with pytest.raises(ValueError):
        cm.memory_precision_at_k(["a"], {"a"}, 0)


def test_stale_memory_rate():
    from portagent.contracts.memory import MemoryRecord

    def rec(i: int, **kw: Any) -> MemoryRecord:
        base = {
            "memory_id": f"mem_{i:016x}",
            "statement": "s",
            "source": "src",
            "scope": "project",
            "owner": "o",
            "confidence": 0.9,
            "created_at": "2026-01-01",
            "expires_at": "never",
        }
        return MemoryRecord(**{**base, **kw})

    used = [rec(i) for i in range(57)] + [
        rec(57, expires_at="2026-02-01"),
        rec(58, status="superseded"),
        rec(59, status="retired"),
    ]
    assert cm.stale_memory_rate(used, datetime(2026, 6, 1, tzinfo=UTC)) == 0.05


def test_token_saving_gate():
    ok = cm.token_saving_gate(28000, 1800, 0.70, 0.775)
    assert ok.passed and ok.saving > 0.9
    small = cm.token_saving_gate(1000, 800, 0.7, 0.7)
    assert not small.passed and "below 35%" in small.reasons[0]
    worse = cm.token_saving_gate(1000, 100, 0.8, 0.6)
    assert not worse.passed and "continuation dropped" in worse.reasons[0]
