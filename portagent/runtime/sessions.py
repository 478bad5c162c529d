"""Sessions: the portable history of a thread, kept by portagent, continued on any provider.

    run --session ID ──► history = store.turns(ID) ──► input = framed history ⊕ new message
                         ──► runner.arun_full (unchanged) ──► completed? store.append(user…, assistant)

The history is portagent's, not an SDK's: each turn is ``{role, content, provider, run_id, at}``, stored in
``$PORTAGENT_HOME/sessions.db`` (``SqliteSessionStore`` in ``runtime/session_store.py``; any object with the ``SessionStore`` protocol
may replace it). A run in a session sends the earlier turns *as input*, framed in one block before the new user
message (``frame_history``), on every provider: the same bytes reach openai-agents, ADK, Claude Code, the
Anthropic Messages API and LangGraph, so a thread started on one provider continues on another (docs/sessions.md;
tests/sessions/test_sessions.py takes every ordered pair of the five). The SDKs' own session mechanisms
(openai-agents ``Session``, ADK ``SessionService``, Claude Code ``resume``) keep a provider's own items and
cannot receive another provider's turns (Claude Code has no API to inject assistant turns), so they are not
used — one observable behaviour instead of three.

Only a completed run adds turns (its user message(s), then its final output as the assistant turn); a
failed, stopped, duplicate or waiting run leaves the thread as it was, and re-running a waiting request
(same idempotency key) sends the same history again. Session history is never written to a memory store.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from portagent.contracts.errors import UsageError
from portagent.contracts.session import (
    HISTORY_CLOSE,
    HISTORY_OPEN,
    TURN_CLOSE,
    TURN_OPEN,
    Turn,
    frame_history,
    split_framed,
)
from portagent.runtime.session_store import SessionStore, check_session_id, open_session_store

if TYPE_CHECKING:
    from portagent.contracts.bundle import AgentBundle
    from portagent.contracts.run import RunRequest
    from portagent.runtime.runner import RunConfig, RunOutput

SESSION_EXPORT_KIND = "portagent-session"
SESSION_EXPORT_VERSION = 1


def output_text(final: Any) -> str:
    """A final output as an assistant turn's text (structured outputs as compact JSON)."""
    if isinstance(final, str):
        return final
    return json.dumps(final, ensure_ascii=False, sort_keys=True)


def session_request(
    request: RunRequest, turns: Sequence[Turn], *, omitted: int = 0, compacted: str | None = None
) -> RunRequest:
    """``request`` with its first message framed by the thread's earlier turns."""
    assert request.session_id is not None
    messages = request.messages
    first = frame_history(request.session_id, turns, messages[0], omitted=omitted, compacted=compacted)
    new_input: str | list[str] = [first, *messages[1:]] if len(messages) > 1 else first
    return request.model_copy(update={"input": new_input})


@dataclass
class FittedHistory:
    """What a run in a session sends of its thread under a context budget."""

    kept: list[Turn]
    """The newest turns, sent as they are."""
    excluded: list[dict[str, Any]] = field(default_factory=list)
    """The older turns left out, as a manifest part (``ExcludedPart``)."""
    compacted: str | None = None
    """Those turns compacted (``tracing.handoff.render_compacted``), sent instead of them; None when
    they have no traces on disk or even the compaction does not fit."""
    compacted_part: dict[str, Any] | None = None
    """The compaction as a manifest part (type ``handoff``)."""


def fit_history(bundle: AgentBundle, request: RunRequest, turns: Sequence[Turn]) -> FittedHistory:
    """The newest turns that fit the root agent's ``max_context_tokens`` beside what cannot be left out
    (instructions, tool declarations, the new messages); the older ones are **compacted** into a handoff
    package from their runs' traces (``tracing/handoff.py``) when it fits, else only left out. Without a budget
    every turn is kept. Estimated tokens (``adapters/context_manifest.py``).

    Linear in the thread, not quadratic: each candidate cut's history block is sized from suffix sums (the
    framing is a contract, ``contracts/session.py``), each run's trace is read once, and a cut is only
    compacted when a lower bound of its block (the compaction's request and answer lines) fits."""
    from portagent.adapters.context_manifest import manifest_fixed_tokens

    budget = bundle.spec.max_context_tokens
    if budget is None or not turns:
        return FittedHistory(list(turns))
    assert request.session_id is not None
    session_id = request.session_id
    available = budget - manifest_fixed_tokens(bundle, request)
    total = len(turns)
    suffix = [0] * (total + 1)  # suffix[n]: the framed size of the newest n turns
    for n in range(1, total + 1):
        t = turns[total - n]
        suffix[n] = suffix[n - 1] + len(TURN_OPEN.format(role=t.role)) + len(t.content) + len(TURN_CLOSE) + 3

    def block(n: int, compacted: int | None) -> int:
        """Estimated tokens of the history block keeping the newest ``n`` turns (what ``frame_history``
        writes and ``split_framed`` reads back), after a compaction of ``compacted`` characters."""
        omitted = f' omitted="{total - n}"' if total - n else ""
        opening = HISTORY_OPEN.format(session=session_id, turns=n, omitted=omitted)
        size = len(opening) + 1 + (compacted + 1 if compacted else 0) + suffix[n] + len(HISTORY_CLOSE)
        return math.ceil(size / 4)  # estimate_tokens of that block

    if block(total, None) <= available:
        return FittedHistory(list(turns))
    # cut between exchanges only: the kept part starts with a user turn (or is empty)
    cuts = [n for n in range(total - 1, -1, -1) if n == 0 or turns[total - n].role == "user"]
    runs = _ThreadRuns(turns)
    for n in cuts:  # the most newest turns that fit beside the compaction of the older ones
        dropped = total - n
        floor = runs.floor(dropped)
        if floor is None:
            break  # an older run kept no trace: no cut from here on can be compacted
        if block(n, floor) > available:
            continue
        compacted, part = _compact_turns(session_id, turns[:dropped], runs.events(dropped))
        if compacted is not None and block(n, len(compacted)) <= available:
            return _fitted(session_id, turns, n, budget, compacted, part)
    keep = next((n for n in cuts if block(n, None) <= available), 0)
    return _fitted(session_id, turns, keep, budget, None, None)


class _ThreadRuns:
    """The runs behind a thread's turns, each trace read once (``fit_history``): the events of the runs of
    the oldest ``k`` turns, and a lower bound of their compaction's size."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = turns
        self.order: list[str] = []  # run ids, in the order their first assistant turn appears
        self.paths: dict[str, str] = {}  # run id -> its trace file (that assistant turn's)
        self.upto: list[int] = []  # upto[k]: how many runs the oldest k turns name
        self.missing_from: int | None = None  # the first k whose runs include one without a trace
        for k, t in enumerate(turns, start=1):
            if t.role == "assistant" and t.run_id and t.run_id not in self.order:
                self.order.append(t.run_id)
                if not t.trace_path or not Path(t.trace_path).is_file():
                    self.missing_from = self.missing_from or k
                else:
                    self.paths[t.run_id] = t.trace_path
            self.upto.append(len(self.order))
        self._files: dict[str, list[Any]] = {}
        self._runs: dict[str, list[Any]] = {}
        self._floors: list[int] = []  # _floors[i]: the floor of runs[:i+1]

    def _run(self, i: int) -> list[Any]:
        run_id = self.order[i]
        if run_id not in self._runs:
            from portagent.tracing.timeline import load_trace_file

            path = self.paths[run_id]
            if path not in self._files:
                self._files[path] = load_trace_file(path)
            self._runs[run_id] = [e for e in self._files[path] if e.run_id == run_id]
        return self._runs[run_id]

    def floor(self, k: int) -> int | None:
        """Characters the compaction of the oldest ``k`` turns takes at least (its frame and each run's
        request and answer lines); None when one of their runs kept no trace."""
        from portagent.tracing.handoff import compacted_floor

        if self.missing_from is not None and k >= self.missing_from:
            return None
        count = self.upto[k - 1] if k else 0
        while len(self._floors) < count:
            i = len(self._floors)
            self._floors.append((self._floors[-1] if i else 0) + compacted_floor(self._run(i)))
        return (self._floors[count - 1] if count else 0) + compacted_floor([])

    def events(self, k: int) -> list[Any]:
        """The events of the runs of the oldest ``k`` turns, in order."""
        return [e for i in range(self.upto[k - 1] if k else 0) for e in self._run(i)]


def _fitted(
    session_id: str,
    turns: Sequence[Turn],
    keep: int,
    budget: int,
    compacted: str | None,
    part: dict[str, Any] | None,
) -> FittedHistory:
    from portagent.adapters.context_manifest import estimate_tokens

    dropped = turns[: len(turns) - keep]
    how = f"compacted into {part['source'].split(' ')[0]}" if part is not None else "left out"
    excluded = {
        "type": "history",
        "source": f"session:{session_id}#{dropped[0].seq}-{dropped[-1].seq}",
        "tokens": estimate_tokens("\n".join(t.content for t in dropped)),
        "reason": f"max_context_tokens {budget}: the oldest turns {how}, the newest {keep} kept",
    }
    return FittedHistory(list(turns[len(turns) - keep :]), [excluded], compacted, part)


def _compact_turns(
    session_id: str, dropped: Sequence[Turn], events: list[Any]
) -> tuple[str | None, dict[str, Any] | None]:
    """The dropped turns compacted from their runs' ``events``, or (None, None) when they have none."""
    from portagent.adapters.context_manifest import estimate_tokens
    from portagent.core.clock import FixedClock
    from portagent.tracing.handoff import compact, render_compacted

    if not events:
        return None, None
    package = compact(events, owner=f"session:{session_id}", clock=FixedClock())
    text = render_compacted(package, events, dropped[0].seq, dropped[-1].seq)
    part = {
        "type": "handoff",
        "source": f"handoff:{package.handoff_id} (session:{session_id}#{dropped[0].seq}-{dropped[-1].seq})",
        "tokens": estimate_tokens(text),
    }
    return text, part


async def arun_in_session(
    agent: AgentBundle | str | Path,
    request: RunRequest,
    config: RunConfig | None = None,
    *,
    store: SessionStore | None = None,
    on_event: Any = None,
) -> RunOutput:
    """Run ``request`` as the next exchange of thread ``request.session_id`` (created if new).

    The runner is used as it is; this wrapper only builds the input from the stored history and, when the
    run completed, appends the new turns.
    """
    from portagent.contracts.bundle import AgentBundle, load_agent
    from portagent.core.secrets import mask_text
    from portagent.runtime.runner import arun_full

    if request.session_id is None:
        raise UsageError("a session run needs a session id (RunRequest.session_id / --session ID)")
    session_id = check_session_id(request.session_id)
    bundle = agent if isinstance(agent, AgentBundle) else load_agent(agent)
    owned = store is None
    sessions: SessionStore = store if store is not None else open_session_store()
    try:
        history = _as_when_paused(request, sessions.turns(session_id))
        fitted = fit_history(bundle, request, history)
        config = _with_session_context(config, session_id, fitted)
        run_request = session_request(
            request, fitted.kept, omitted=len(history) - len(fitted.kept), compacted=fitted.compacted
        )
        output = await arun_full(bundle, run_request, config, on_event=on_event)
        result = output.result
        if result.status == "completed":
            new: list[tuple[str, str]] = [("user", mask_text(m)) for m in request.messages]
            new.append(("assistant", output_text(result.final_output)))
            sessions.append(
                session_id,
                new,
                provider=request.provider,
                run_id=result.run_id,
                agent=bundle.root,
                trace_path=_absolute(result.trace_path, config),
            )
        return output
    finally:
        if owned:
            sessions.close()


def _as_when_paused(request: RunRequest, history: list[Turn]) -> list[Turn]:
    """The thread a paused run of this request was framed with, when the thread has grown since.

    A run waiting for approval (or interrupted) goes on from its journal, which replays the model's earlier
    answers only to the request they answered, and its decided card belongs to that request: framed with
    turns added since (another exchange of the thread completed meanwhile), it would be another request,
    refused (``resume.refuse_another_request``) — with no way left to finish the approved call. Its
    framed input says how many turns the thread had (``turns`` + ``omitted`` of its history block), and
    turns are only ever appended, so the thread as it was is the first that many. The resumed run's
    exchange is then added after the newer turns, as it completes. A thread cleared since is left as it
    stands (the refusal says the request differs)."""
    if not request.idempotency_key or not history:
        return history
    from portagent.core.home import state_file
    from portagent.runtime.runstore import RUNS_DB, RunStore

    path = state_file(RUNS_DB, create=False)
    if not path.is_file():
        return history
    store = RunStore(path)
    try:
        prior = store.get(request.idempotency_key)
    finally:
        store.close()
    if prior is None or prior.status not in ("waiting_approval", "interrupted") or not prior.trace_path:
        return history
    try:
        run = json.loads((Path(prior.trace_path).parent / "run.json").read_text(encoding="utf-8"))
        sent = run["manifest"]["request"]["input"]
    except (OSError, ValueError, KeyError, TypeError):
        return history
    first = sent[0] if isinstance(sent, list) and sent else sent
    framed = split_framed(first) if isinstance(first, str) else None
    had = framed.turns + framed.omitted if framed is not None else 0
    return history[:had] if had < len(history) else history


def thread_request(bundle: AgentBundle, request: RunRequest, thread: Sequence[Any]) -> RunRequest:
    """An eval case's request continuing the thread it gives (``Case.thread``, ``{role, content}`` turns):
    framed exactly as a run in a session is, under the root agent's ``max_context_tokens`` (``fit_history``;
    these turns have no traces, so what does not fit is left out, not compacted). The session id is
    ``case:<case_id>``; nothing is stored."""
    return _thread(bundle, request, thread)[0]


def thread_options(bundle: AgentBundle, request: RunRequest, thread: Sequence[Any]) -> dict[str, Any]:
    """The ``RunOptions.extra`` of a run of ``thread_request(bundle, request, thread)``: what the budget
    left out of the thread, for its context manifest — as a run in a session tells it
    (``_with_session_context``). Without it the manifest of a case whose thread did not fit listed no
    exclusion while its history block said turns were omitted. Empty when there is no thread."""
    if not thread:
        return {}
    framed, fitted = _thread(bundle, request, thread)
    assert framed.session_id is not None
    return _session_option(framed.session_id, fitted)


def _thread(
    bundle: AgentBundle, request: RunRequest, thread: Sequence[Any]
) -> tuple[RunRequest, FittedHistory]:
    if not thread:
        return request, FittedHistory([])
    session_id = f"case:{request.case_id or 'thread'}"
    turns = [
        Turn(seq=i, role=t.role, content=t.content, created_at="") for i, t in enumerate(thread, start=1)
    ]
    request = request.model_copy(update={"session_id": session_id})
    fitted = fit_history(bundle, request, turns)
    return session_request(request, fitted.kept, omitted=len(turns) - len(fitted.kept)), fitted


def export_session(session_id: str, turns: Sequence[Turn]) -> dict[str, Any]:
    """A thread as a portable JSON document (``sessions export``)."""
    return {
        "kind": SESSION_EXPORT_KIND,
        "schema_version": SESSION_EXPORT_VERSION,
        "session_id": session_id,
        "turns": [t.model_dump(mode="json") for t in turns],
    }


def describe_session_run(session_id: str, result: Any) -> str:
    """The CLI's ``session`` line after a run in a thread."""
    store = open_session_store(create=False)
    try:
        count = len(store.turns(session_id))
    finally:
        store.close()
    added = "turns added" if result.status == "completed" else f"nothing added (run {result.status})"
    return f"session    {session_id}  {count} turns, {added}  (portagent sessions show {session_id})"


def _with_session_context(config: RunConfig | None, session_id: str, fitted: FittedHistory) -> RunConfig:
    """A copy of ``config`` telling the context manifest what the budget left out of the thread."""
    from dataclasses import replace

    from portagent.runtime.runner import RunConfig

    config = config or RunConfig()
    extra = {**config.options.extra, **_session_option(session_id, fitted)}
    return replace(config, options=replace(config.options, extra=extra))


def _session_option(session_id: str, fitted: FittedHistory) -> dict[str, Any]:
    from portagent.adapters.context_manifest import SESSION_CONTEXT_OPTION

    context = {"session_id": session_id, "excluded": fitted.excluded, "compacted": fitted.compacted_part}
    return {SESSION_CONTEXT_OPTION: context}


def _absolute(trace_path: str | None, config: RunConfig) -> str | None:
    """The run's trace as an absolute path. Recorded and replayed runs name it relative to their folder
    (``run_record.trace_ref``); any other run gives the path it wrote, relative to the working folder when
    ``--out`` was relative (joining ``--out`` to it again named ``out/out/trace.jsonl``)."""
    if trace_path is None:
        return None
    path = Path(trace_path)
    if not path.is_absolute() and config.out_dir is not None and config.endpoint.mode in ("record", "replay"):
        path = config.out_dir / path
    return str(path.resolve())


def session_events(turns: Sequence[Turn]) -> tuple[list[Any], dict[str, str]]:
    """The trace events of a thread's runs, in order, and each run's trace file. A trace that is gone or
    unreadable is one UsageError naming it."""
    from portagent.tracing.timeline import load_trace_file

    paths: dict[str, str] = {}
    for t in turns:
        if t.role == "assistant" and t.run_id and t.run_id not in paths:
            if not t.trace_path:
                raise UsageError(
                    f"run {t.run_id} of this thread kept no trace on disk: no handoff can be checked"
                )
            paths[t.run_id] = t.trace_path
    events: list[Any] = []
    for run_id, path in paths.items():
        if not Path(path).is_file():
            raise UsageError(
                f"the trace of run {run_id} is not at {path} any more: no handoff can be checked"
            )
        events += [e for e in load_trace_file(path) if e.run_id == run_id]
    return events, paths


def transcript_hash(turns: Sequence[Turn]) -> str:
    text = json.dumps([[t.seq, t.role, t.content] for t in turns], ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
