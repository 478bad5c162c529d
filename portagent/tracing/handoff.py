"""Compaction: trace events → a ``HandoffPackage`` (``contracts/handoff.py``), validated and verified.

    compact(events, owner=…, clock=…)  a pure function: every claim is derived from an event and names it
    validate(package)                  O ∧ D ∧ P ∧ E ∧ N, ids and owner, evidence on every claim
    verify(package, events)            every ``<run_id>#<seq>`` exists and says what the claim says

What comes from where (nothing is invented; what a trace cannot say — when the work is done, a person's
limits and decisions — is passed in as ``stated:<owner>`` claims):

| part | from |
|---|---|
| goal | the last run's user message (``run.started.input``; the new message of a session run) |
| limits | non-allow ``permission.decision``s (tool, decision, rule, reason), ``budget.exceeded`` |
| decisions | ``approval.resolved`` (who decided), ``handoff`` (delegation), ``route.decision`` |
| actions | each ``tool.call`` with its ``tool.result`` (``ok`` or the error code) |
| artifacts | effects (``tool.result.effect_id``), each run's trace, the session transcript |
| sources | memories returned by ``recall`` (``memory:<id>``) |
| tried errors / do not redo | failed ``tool.result``s and ``error`` events; refusals (denied, rejected, invalid) are not to be retried as they were |
| pending | approvals requested and not decided |
| next step | how the last run ended (``run.completed``, or the pending approval) |
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from portagent.contracts.handoff import (
    ActionClaim,
    ArtifactRef,
    Claim,
    DecisionClaim,
    HandoffPackage,
    SourceRef,
)
from portagent.contracts.session import split_framed
from portagent.core.clock import Clock, iso

STATED_FIELDS = frozenset({"goal", "done_when", "limits", "decisions", "pending", "next_step"})
"""Parts a person may state (``stated:<who>``); every other claim must point at trace events."""
NOT_TO_REDO = frozenset({"permission_denied", "approval_rejected", "validation_error", "unknown_tool"})
"""Errors that will happen again if the same call is repeated as it was."""


def ref(e: Any) -> str:
    return f"{e.run_id}#{e.seq}"


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _goal_text(started: Any) -> str:
    first = started.input if isinstance(started.input, str) else (started.input or [""])[-1]
    framed = split_framed(first) if isinstance(first, str) else None
    return framed.message if framed is not None else str(first)


def compact(
    events: Sequence[Any],
    *,
    owner: str,
    clock: Clock,
    done_when: Iterable[str] = (),
    limits: Iterable[str] = (),
    decisions: Iterable[tuple[str, str]] = (),
    trace_refs: Mapping[str, str] | None = None,
    session: tuple[str, str] | None = None,
) -> HandoffPackage:
    """The handoff package of ``events`` (one or several runs, in order). ``done_when``, ``limits`` and
    ``decisions`` (decision, reason) are stated by ``owner``; ``trace_refs`` maps run ids to their trace
    files, ``session`` is ``(session_id, transcript hash)`` for a thread."""
    stated = [f"stated:{owner}"]
    runs: list[str] = []
    for e in events:
        if e.run_id not in runs:
            runs.append(e.run_id)
    calls = {(e.run_id, e.call_id): e for e in events if e.type == "tool.call"}
    started = [e for e in events if e.type == "run.started"]
    goal = Claim(text=_goal_text(started[-1]), evidence=[ref(started[-1])]) if started else None

    out_limits = [Claim(text=t, evidence=stated) for t in limits]
    out_decisions = [DecisionClaim(decision=d, reason=r, evidence=stated) for d, r in decisions]
    actions: list[ActionClaim] = []
    artifacts: list[ArtifactRef] = []
    sources: list[SourceRef] = []
    tried: list[Claim] = []
    redo: list[Claim] = []
    requested: dict[str, Any] = {}
    results = {(e.run_id, e.call_id): e for e in events if e.type == "tool.result"}
    for e in events:
        call = calls.get((e.run_id, getattr(e, "call_id", None))) if hasattr(e, "call_id") else None
        tool = call.tool if call is not None else "?"
        match e.type:
            case "permission.decision" if e.decision != "allow":
                out_limits.append(
                    Claim(text=f"{tool}: {e.decision} ({e.rule}: {e.reason})", evidence=[ref(e)])
                )
            case "budget.exceeded":
                out_limits.append(
                    Claim(
                        text=f"budget {e.limit} = {e.limit_value} (observed {e.observed})", evidence=[ref(e)]
                    )
                )
            case "approval.resolved":
                who = e.reviewer or "the approver"
                out_decisions.append(
                    DecisionClaim(
                        decision=f"{e.status} {tool} ({e.call_id})",
                        reason=f"decided by {who}" + (f": {e.note}" if e.note else ""),
                        evidence=[ref(e)],
                    )
                )
                requested.pop(f"{e.run_id}:{e.approval_id}", None)
            case "approval.requested":
                requested[f"{e.run_id}:{e.approval_id}"] = e
            case "handoff":
                out_decisions.append(
                    DecisionClaim(
                        decision=f"delegate from {e.from_agent} to {e.to_agent} ({e.kind})",
                        reason=e.reason or "the model routed the request (no reason given)",
                        evidence=[ref(e)],
                    )
                )
            case "route.decision":
                out_decisions.append(
                    DecisionClaim(
                        decision=f"route {e.request_id}: {e.decision} -> {e.selected_route or '-'}",
                        reason=e.reason,
                        evidence=[ref(e)],
                    )
                )
            case "tool.call":
                result = results.get((e.run_id, e.call_id))
                outcome = (
                    "no_result" if result is None else ("ok" if result.ok else (result.error or "error"))
                )
                evidence = [ref(e)] + ([ref(result)] if result is not None else [])
                actions.append(
                    ActionClaim(
                        tool=e.tool, call_id=e.call_id, run_id=e.run_id, outcome=outcome, evidence=evidence
                    )
                )
            case "tool.result":
                if e.effect_id:
                    artifacts.append(
                        ArtifactRef(ref=f"effect:{e.effect_id}", kind="effect", evidence=[ref(e)])
                    )
                if e.ok and tool == "recall" and isinstance(e.output, dict):
                    for m in e.output.get("memories", []):
                        if isinstance(m, dict) and m.get("memory_id"):
                            sources.append(
                                SourceRef(
                                    title=_short(m.get("statement", ""), 80),
                                    ref=f"memory:{m['memory_id']}",
                                    evidence=[ref(e)],
                                )
                            )
                if not e.ok:
                    text = f"{tool} {e.call_id} failed: {e.error}"
                    tried.append(Claim(text=text, evidence=[ref(e)]))
                    if e.error in NOT_TO_REDO and call is not None:
                        redo.append(
                            Claim(
                                text=f"do not repeat {tool} with args_hash {call.args_hash} as it was ({e.error})",
                                evidence=[ref(call), ref(e)],
                            )
                        )
            case "error":
                tried.append(Claim(text=f"{e.error_type}: {_short(e.message)}", evidence=[ref(e)]))
            case _:
                pass
    for run_id, path in (trace_refs or {}).items():
        first = next((e for e in started if e.run_id == run_id), None)
        if first is not None:
            artifacts.append(ArtifactRef(ref=f"trace:{path}", kind="trace", evidence=[ref(first)]))
    if session is not None and started:
        artifacts.append(
            ArtifactRef(
                ref=f"session:{session[0]}", kind="transcript", hash=session[1], evidence=[ref(started[-1])]
            )
        )
    pending = [
        Claim(
            text=f"approval {a.approval_id} for {calls[(a.run_id, a.call_id)].tool if (a.run_id, a.call_id) in calls else a.call_id}",
            evidence=[ref(a)],
        )
        for a in requested.values()
    ]
    package: dict[str, Any] = {
        "owner": owner,
        "created_at": iso(clock.now()),
        "runs": runs,
        "goal": goal,
        "done_when": [Claim(text=t, evidence=stated) for t in done_when],
        "limits": _unique(out_limits),
        "decisions": out_decisions,
        "actions": actions,
        "artifacts": artifacts,
        "sources": sources,
        "tried_errors": tried,
        "do_not_redo": _unique(redo),
        "pending": pending,
        "next_step": _next_step(events, pending),
        "memory_candidates": [],
    }
    return HandoffPackage(handoff_id=handoff_id(package), **package)


def _unique(claims: list[Claim]) -> list[Claim]:
    seen: dict[str, Claim] = {}
    for c in claims:
        if c.text in seen:
            seen[c.text] = seen[c.text].model_copy(update={"evidence": [*seen[c.text].evidence, *c.evidence]})
        else:
            seen[c.text] = c
    return list(seen.values())


def _next_step(events: Sequence[Any], pending: list[Claim]) -> Claim | None:
    if pending:
        return Claim(
            text=f"decide {pending[0].text} ('portagent approvals approve|reject|edit'), then re-run the request",
            evidence=pending[0].evidence,
        )
    done = [e for e in events if e.type == "run.completed"]
    if not done:
        return None
    last = done[-1]
    match last.status:
        case "completed":
            text = f"continue from the last answer ({_short(last.final_output, 80)}) with the user's next message"
        case "budget_exhausted":
            text = (
                f"the run stopped at its {last.stop_reason} limit: raise it or narrow the task, then continue"
            )
        case "failed":
            text = f"the run failed ({last.stop_reason}): fix the cause named in its error, then re-run"
        case _:
            text = f"the run ended {last.status} ({last.stop_reason}): resume it with the same request"
    return Claim(text=text, evidence=[ref(last)])


def handoff_id(fields: Mapping[str, Any]) -> str:
    """``ho_`` + 16 hex over the content (everything but the id and the creation time)."""

    def plain(v: Any) -> Any:
        if hasattr(v, "model_dump"):
            return v.model_dump(mode="json")
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    body = {
        k: plain(v) for k, v in fields.items() if k not in ("handoff_id", "created_at", "handoff_version")
    }
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return "ho_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# --- validation ------------------------------------------------------------------------------------------

PARTS = ("goal", "decisions", "limits", "evidence", "next_step")
"""O, D, P, E, N."""


def completeness(h: HandoffPackage) -> dict[str, bool]:
    """Which of O, D, P, E, N the package has."""
    return {
        "goal": h.goal is not None,
        "decisions": bool(h.decisions),
        "limits": bool(h.limits),
        "evidence": bool(h.artifacts or h.sources),
        "next_step": h.next_step is not None,
    }


def _claims(h: HandoffPackage) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name in ("goal", "next_step"):
        value = getattr(h, name)
        if value is not None:
            out.append((name, value))
    for name in (
        "done_when",
        "limits",
        "decisions",
        "actions",
        "artifacts",
        "sources",
        "tried_errors",
        "do_not_redo",
        "pending",
    ):
        out += [(f"{name}.{i}", c) for i, c in enumerate(getattr(h, name))]
    return out


def validate(h: HandoffPackage) -> list[str]:
    """Problems of the package on its own (empty when valid): the five parts, closing criteria, runs, the
    id, and evidence on every claim (``stated:`` only where a person may state it)."""
    problems = [f"missing {part}" for part, ok in completeness(h).items() if not ok]
    if not h.done_when:
        problems.append("missing done_when (closing criteria)")
    if not h.runs:
        problems.append("missing runs")
    body = h.model_dump(exclude={"handoff_id", "created_at"})
    if handoff_id(body) != h.handoff_id:
        problems.append(f"handoff_id {h.handoff_id} does not match its content (edited after it was built?)")
    for where, claim in _claims(h):
        if not claim.evidence:
            problems.append(f"{where}: no evidence")
        elif (
            any(r.startswith("stated:") for r in claim.evidence) and where.split(".")[0] not in STATED_FIELDS
        ):
            problems.append(f"{where}: must point at trace events, not a statement")
    return problems


def verify(h: HandoffPackage, events: Sequence[Any]) -> list[str]:
    """Problems of the package against the trace (empty when every claim is backed): each event named
    exists, and says what the claim says."""
    index = {ref(e): e for e in events}
    problems: list[str] = []
    known_runs = {e.run_id for e in events}
    problems += [f"runs: {r} is not in the trace" for r in h.runs if r not in known_runs]
    for where, claim in _claims(h):
        backing = []
        for r in claim.evidence:
            if r.startswith("stated:"):
                continue
            e = index.get(r)
            if e is None:
                problems.append(f"{where}: {r} is not in the trace")
            else:
                backing.append(e)
        if not backing:
            continue
        problem = _check(where.split(".")[0], claim, backing)
        if problem:
            problems.append(f"{where}: {problem}")
    return problems


def _check(part: str, claim: Any, backing: list[Any]) -> str | None:
    types = {e.type for e in backing}
    match part:
        case "goal":
            if not any(e.type == "run.started" and _says(e.input, claim.text) for e in backing):
                return "no run.started with this input"
        case "limits":
            if not any(
                (e.type == "permission.decision" and e.decision != "allow") or e.type == "budget.exceeded"
                for e in backing
            ):
                return f"events {sorted(types)} are not limits"
        case "decisions":
            if not types & {"approval.resolved", "handoff", "route.decision", "permission.decision"}:
                return f"events {sorted(types)} are not decisions"
        case "actions":
            call = next((e for e in backing if e.type == "tool.call"), None)
            if (
                call is None
                or call.call_id != claim.call_id
                or call.tool != claim.tool
                or call.run_id != claim.run_id
            ):
                return f"no tool.call of {claim.tool} {claim.call_id} in run {claim.run_id}"
            result = next(
                (e for e in backing if e.type == "tool.result" and e.call_id == claim.call_id), None
            )
            outcome = "no_result" if result is None else ("ok" if result.ok else (result.error or "error"))
            if outcome != claim.outcome:
                return f"claims {claim.outcome}, the trace says {outcome}"
        case "artifacts":
            if claim.kind == "effect" and not any(
                e.type == "tool.result" and f"effect:{e.effect_id}" == claim.ref for e in backing
            ):
                return f"no tool.result with {claim.ref}"
        case "sources":
            if claim.ref.startswith("memory:") and not any(
                e.type == "tool.result" and claim.ref.removeprefix("memory:") in json.dumps(e.output)
                for e in backing
            ):
                return f"no recall result returned {claim.ref}"
        case "tried_errors" | "do_not_redo":
            if not any((e.type == "tool.result" and not e.ok) or e.type == "error" for e in backing):
                return "no failed result or error event"
        case "pending":
            if "approval.requested" not in types:
                return "no approval.requested event"
        case _:
            pass
    return None


def _says(value: Any, text: str) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, str) and text in v for v in values)


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def package_tokens(h: HandoffPackage) -> int:
    """The package's size in estimated tokens (its compact JSON)."""
    return estimate_tokens(h.model_dump_json(exclude_defaults=True))


COMPACTED_OPEN = '<compacted_turns turns="{first}-{last}" handoff="{handoff_id}">'
COMPACTED_CLOSE = "</compacted_turns>"


def _turn_lines(events: Sequence[Any]) -> list[str]:
    """Each run's request and answer, cut to 80 characters (the first lines of a compaction)."""
    lines = []
    for e in events:
        if e.type == "run.started":
            lines.append(f"request: {_short(_goal_text(e), 80)}")
        elif e.type == "run.completed":
            lines.append(f"answer ({e.status}): {_short(e.final_output, 80)}")
    return lines


def compacted_floor(events: Sequence[Any]) -> int:
    """A lower bound of ``len(render_compacted(…, events, …))``: with no events, its opening and closing
    lines (one-digit turn numbers); else what ``events``' request and answer lines and their entries in the
    actions line add. The floors of consecutive runs add up (``runtime/sessions.fit_history`` sizes a cut
    before compacting it)."""
    if not events:
        opening = COMPACTED_OPEN.format(first=1, last=1, handoff_id="ho_" + "0" * 16)
        return len(opening) + 1 + len(COMPACTED_CLOSE)
    results = {(e.run_id, e.call_id): e for e in events if e.type == "tool.result"}
    actions = 0  # each action's "<tool> <outcome>, " in the actions line
    for e in events:
        if e.type == "tool.call":
            r = results.get((e.run_id, e.call_id))
            outcome = "no_result" if r is None else ("ok" if r.ok else (r.error or "error"))
            actions += len(e.tool) + 1 + len(outcome) + 2
    return sum(len(line) + 1 for line in _turn_lines(events)) + actions


def render_compacted(h: HandoffPackage, events: Sequence[Any], first: int, last: int) -> str:
    """Turns a context budget left out, as the model reads them: each run's request and answer (cut to
    80 characters), then the package's decisions, limits, actions, errors not to repeat and next step."""
    lines = [COMPACTED_OPEN.format(first=first, last=last, handoff_id=h.handoff_id)]
    lines += _turn_lines(events)
    lines += [f"decision: {d.decision} (because {d.reason})" for d in h.decisions]
    lines += [f"limit: {c.text}" for c in h.limits]
    if h.actions:
        lines.append("actions: " + ", ".join(f"{a.tool} {a.outcome}" for a in h.actions))
    lines += [f"do not redo: {c.text}" for c in h.do_not_redo]
    lines += [f"source: {s.title} ({s.ref})" for s in h.sources]
    lines.append(COMPACTED_CLOSE)
    return "\n".join(lines)


# --- delegation ------------------------------------------------------------------------------------------

DELEGATION_OPEN = '<handoff id="{handoff_id}" from="{parent}" to="{target}">'
DELEGATION_CLOSE = "</handoff>"


def delegation_package(
    events: Sequence[Any], *, parent: str, target: str, task: str, clock: Clock
) -> HandoffPackage:
    """The package a sub-agent gets when ``parent`` delegates ``task`` to it (``Delegate.context: handoff``):
    the run so far compacted (``compact``, owned by ``parent``), the ``handoff`` event being the delegation
    decision, and the task as the next step (backed by that event)."""
    package = compact(events, owner=parent, clock=clock)
    last = next((e for e in reversed(events) if e.type == "handoff" and e.to_agent == target), None)
    fields = package.model_dump(exclude={"handoff_id", "handoff_version"})
    fields["next_step"] = Claim(
        text=f"{target}: {_short(task, 200)}", evidence=[ref(last)] if last is not None else []
    )
    return HandoffPackage(handoff_id=handoff_id(fields), **fields)


def render_delegation(h: HandoffPackage, parent: str, target: str, task: str) -> str:
    """The sub-agent's input, as the model reads it: the package (goal, decisions, limits, what was done and
    how it ended, errors not to repeat, sources, open items; references, never the tool outputs), then the
    coordinator's request, last."""
    lines = [DELEGATION_OPEN.format(handoff_id=h.handoff_id, parent=parent, target=target)]
    if h.goal is not None:
        lines.append(f"goal: {_short(h.goal.text, 200)}")
    lines += [f"decision: {d.decision} (because {d.reason})" for d in h.decisions]
    lines += [f"limit: {c.text}" for c in h.limits]
    lines += [f"done: {a.tool} {a.call_id} -> {a.outcome}" for a in h.actions]
    lines += [f"tried: {c.text}" for c in h.tried_errors]
    lines += [f"do not redo: {c.text}" for c in h.do_not_redo]
    lines += [f"source: {s.title} ({s.ref})" for s in h.sources]
    lines += [f"artifact: {a.ref}" for a in h.artifacts if a.kind == "effect"]
    lines += [f"pending: {c.text}" for c in h.pending]
    lines.append(DELEGATION_CLOSE)
    lines.append(task)
    return "\n".join(lines)
