"""Recording one run into a cassette folder, and replaying it offline.

A cassette folder (DESIGN §6 layout, ``…/<case>/<provider>/r<repeat>/``) holds the vendor cassette
(``cassette.yaml`` for the Python SDKs, ``transport.jsonl`` for Claude), the normalized
``trace.jsonl`` and ``run.json``. Replay re-runs the real SDK and the real gateway against the
cassette: no server, no network, no key. Timing comes from the recording, never from replay wall time,
and the clock and ids are seeded from the recording, so replaying twice gives byte-identical files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from portagent.adapters.base import REGISTRY, package_version
from portagent.contracts.errors import RecordingError
from portagent.contracts.run import RunRecord, RunRequest
from portagent.contracts.trace import parse_event
from portagent.core.clock import FixedClock, IdFactory

if TYPE_CHECKING:
    from portagent.runtime.runner import RunConfig


@dataclass
class Recorded:
    """What a replay reuses from its recording."""

    record: RunRecord
    events: list[Any]
    model_latencies: list[float | None] = field(default_factory=list)
    tool_latencies: dict[str, float | None] = field(default_factory=dict)
    _model_index: int = 0

    @property
    def duration_ms(self) -> float | None:
        return self.record.result.duration_ms

    @property
    def cold_start(self) -> bool:
        return self.record.result.cold_start

    @property
    def started(self) -> Any:
        return self.events[0]

    def restore_timing(self, data: dict[str, Any]) -> dict[str, Any]:
        """Recorder transform: recorded latencies replace measured ones."""
        if data["type"] == "model.call":
            i = self._model_index
            self._model_index += 1
            data["latency_ms"] = self.model_latencies[i] if i < len(self.model_latencies) else None
        elif data["type"] == "tool.result" and "latency_ms" in data:
            data["latency_ms"] = self.tool_latencies.get(data["call_id"])
        return data


def load_recorded(folder: Path) -> Recorded:
    run_json = folder / "run.json"
    trace = folder / "trace.jsonl"
    if not folder.is_dir():
        raise RecordingError(f"{folder}: no such cassette folder")
    for f in (run_json, trace):
        if not f.is_file():
            raise RecordingError(
                f"{f}: missing from the cassette folder (re-record it with 'portagent record')"
            )
    try:
        record = RunRecord.model_validate_json(run_json.read_text(encoding="utf-8"))
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        loc = ".".join(str(x) for x in first["loc"])  # none when the file is not JSON at all
        raise RecordingError(
            f"{run_json}: not a portagent run record ({f'{loc}: ' if loc else ''}{first['msg']}; re-record it "
            "with 'portagent record')"
        ) from None
    try:
        events = [
            parse_event(json.loads(line)) for line in trace.read_text(encoding="utf-8").splitlines() if line
        ]
    except (ValueError, ValidationError) as e:
        raise RecordingError(f"{trace}: corrupt trace ({type(e).__name__})") from None
    starts = [i for i, e in enumerate(events) if e.type == "run.started"]
    if not starts:
        raise RecordingError(f"{trace}: no run.started event")
    events = events[starts[-1] :]  # the last attempt is what a replay reproduces
    rec = Recorded(record, events)
    rec.model_latencies = [e.latency_ms for e in events if e.type == "model.call"]
    rec.tool_latencies = {e.call_id: e.latency_ms for e in events if e.type == "tool.result"}
    return rec


def version_changes(record: RunRecord) -> list[str]:
    """What differs between the recording's SDK (and Claude Code CLI) versions and the installed ones
    (reported, not fatal: the replay still runs)."""
    m = record.manifest
    now = package_version(REGISTRY[m.provider].package)
    out = []
    if now != m.sdk_version:
        out.append(f"{m.sdk} {m.sdk_version} at recording, {now} installed")
    if m.cli_version is not None:
        cli_now = _installed_cli_version(m.provider)
        if cli_now != m.cli_version:
            out.append(f"Claude Code CLI {m.cli_version} at recording, {cli_now or 'none'} installed")
    return out


def _installed_cli_version(provider: str) -> str | None:
    """The CLI version the provider's adapter reports (Claude: the CLI bundled with claude-agent-sdk)."""
    from portagent.adapters.base import get_adapter
    from portagent.contracts.errors import PortagentError

    try:
        return get_adapter(provider).cli_version()
    except PortagentError:  # the SDK is not installed
        return None


def deferred_approvals(events: list[Any]) -> list[dict[str, Any]]:
    """Scripted ``defer`` entries for the approvals the recording left pending (``run.json`` keeps only
    decisions taken), so a replay of a run that ended ``waiting_approval`` waits again instead of
    rejecting. Needed by Claude replays, where the permission answer itself is compared."""
    resolved = {e.call_id for e in events if e.type == "approval.resolved"}
    return [
        {"tool": e.card.get("tool"), "args_hash": e.card.get("args_hash"), "decision": "defer"}
        for e in events
        if e.type == "approval.requested" and e.call_id not in resolved
    ]


def replay_ids(agent: str, version: str, case_id: str | None, provider: str, repeat: int) -> IdFactory:
    """The seeded id factory of one recorded run. Recording with the same factory as the replay makes
    ids that reach the model (a write's ``effect_id`` in its tool result) identical on both sides,
    so a replayed write does not drift."""
    return IdFactory(seed=f"replay:{agent}@{version}:{case_id}:{provider}:{repeat}")


_VERBS = {"approved": "approve", "edited": "edit", "rejected": "reject", "deferred": "defer"}


class ReplayApprover:
    """A replay's approver: the recording's approval decisions are *compared*, never obeyed.

    Every card of the replay is decided now — by the ``current`` approver (``--approver``, the suite's
    scripted approvals) with the current policy — and the decision is checked against what the
    recording's ``run.json`` says was decided for the same tool and arguments; a difference is kept in
    ``mismatches``. A recorded ``approve`` or ``edit`` never lets a handler run by itself: ``run.json`` is a
    file anyone can edit (a forged approval would make a write run). Without a current approver, only
    the recorded decisions that cannot run a handler (``reject``, ``defer``, with their reviewer and
    note, so the model sees the same answer) are reused; any other card is rejected and reported.
    """

    name = "replay"

    def __init__(self, current: Any, recorded: list[dict[str, Any]]) -> None:
        from portagent.tools.approvers import make_approver

        self.current = make_approver(current) if current is not None else None
        self._recorded = [dict(r) for r in recorded]
        self._used: set[int] = set()
        self.mismatches: list[str] = []

    def _take(self, tool: str, args_hash: str) -> dict[str, Any] | None:
        for i, r in enumerate(self._recorded):
            if i not in self._used and r.get("tool") == tool and r.get("args_hash") in (None, args_hash):
                self._used.add(i)
                return r
        return None

    async def decide(self, card: Any) -> Any:
        from portagent.tools.approvers import ApproverDecision

        rec = self._take(card.tool, card.args_hash)
        want = str(rec.get("decision")) if rec is not None else None
        if self.current is not None:
            answer = await self.current.decide(card)
        elif rec is not None and want in ("reject", "defer"):
            reviewer, note = str(rec.get("reviewer") or ""), str(rec.get("note") or "")
            if want == "reject":
                answer = ApproverDecision("rejected", reviewer or "auto-deny", note=note)
            else:
                answer = ApproverDecision("deferred", reviewer or "defer", note=note)
        else:
            answer = ApproverDecision(
                "rejected",
                "portagent-replay",
                note="a replay never runs a handler on a recorded approval; give the replay an approver",
            )
        got = _VERBS.get(answer.status, answer.status)
        who = getattr(self.current, "name", None) or "the replay"
        if got != want:
            self.mismatches.append(
                f"{card.tool} (args_hash {card.args_hash}): the recording says {want or 'nothing'}, "
                f"{who} decided {got}"
            )
        elif got == "edit" and rec is not None and rec.get("args") != answer.args:
            self.mismatches.append(f"{card.tool} (args_hash {card.args_hash}): edited to other arguments")
        return answer


def approval_notes(config: RunConfig) -> list[str]:
    """The replay's approval decisions that differ from its recording (empty when they agree)."""
    approver = config.approver
    if not isinstance(approver, ReplayApprover):
        return []
    return [f"approval differs from the recording: {m}" for m in approver.mismatches]


def replay_config(
    folder: Path, recorded: Recorded, *, out_dir: Path | None = None, approver: Any = None
) -> tuple[RunConfig, RunRequest]:
    """RunConfig and RunRequest for replaying ``folder`` (deterministic clock/ids, recorded timing)."""
    from datetime import datetime

    from portagent.adapters.port import Endpoint
    from portagent.runtime.runner import RunConfig

    m = recorded.record.manifest
    start = recorded.started
    clock = FixedClock(datetime.fromisoformat(start.ts.replace("Z", "+00:00")))
    ids = replay_ids(m.agent, m.agent_version, m.case_id, m.provider, m.repeat)
    endpoint = Endpoint(
        source="replay",  # the recording's own source becomes run.started.recorded_source (runtime.provenance.labelled)
        mode="replay",
        base_url="http://replay.portagent.invalid",
        api_key=REGISTRY[m.provider].dummy_key,
        script_hash=m.emulator_script_hash,
        cassette_dir=folder,
    )
    approvals = ReplayApprover(approver, [*m.approvals, *deferred_approvals(recorded.events)])
    config = RunConfig(
        endpoint=endpoint,
        approver=approvals,
        out_dir=out_dir,
        clock=clock,
        ids=ids,
        recorded_at=m.recorded_at,
        recorded=recorded,
        scope=f"replay:{m.agent}@{m.agent_version}:{m.case_id}:{m.provider}:r{m.repeat}",
    )
    if m.request:
        request = RunRequest.model_validate(m.request)
    else:
        request = RunRequest(input=start.input, provider=m.provider, case_id=m.case_id, repeat=m.repeat)
    return config, request


async def replay_folder(
    agent: Any,
    folder: str | Path,
    *,
    out_dir: Path | None = None,
    request: RunRequest | None = None,
    approver: Any = None,
) -> Any:
    """Replay one recorded run offline. Returns the RunOutput; its run.completed details hold the
    cassette report (played / unplayed / drift) and any SDK version change; ``notes`` the approval
    decisions that differ from the recording's (``ReplayApprover``). ``approver``: the approver that
    decides the replay's cards (default: only the recorded rejections and deferrals are reused)."""
    from portagent.runtime.runner import arun_full

    folder = Path(folder)
    recorded = load_recorded(folder)
    config, req = replay_config(folder, recorded, out_dir=out_dir, approver=approver)
    assert config.scope is not None  # replay_config names the recording's scope
    clear_scope_state(config.scope)  # a replay starts clean and stays deterministic
    output = await arun_full(agent, request or req, config)
    output.notes.extend(approval_notes(config))
    return output


def clear_scope_state(scope: str) -> None:
    """Forget the effects and approval cards an earlier run of the same scope left behind.

    Effects: a replay must execute its writes again. Cards: their seeded ids would be taken, the next
    replay would draw others, and an id that reaches the model (Claude compares every permission
    answer) would differ. A state file that does not exist yet holds nothing to forget (and opening
    SQLite costs about a millisecond per file, per run)."""
    from portagent.core.home import APPROVALS_DB, LEDGER_DB, state_file
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.ledger import EffectLedger

    if state_file(LEDGER_DB, create=False).exists():
        ledger = EffectLedger()
        try:
            ledger.clear_scope(scope)
        finally:
            ledger.close()
    if state_file(APPROVALS_DB, create=False).exists():
        store = ApprovalStore()
        try:
            store.clear_scope(scope)
        finally:
            store.close()
