"""Resuming a run (ADR 0007): what the new attempt replays from the journal of the attempt before,
where it writes, which approval cards can no longer apply, which tools keep an interrupted run from
being resumed, and the result reported instead (ADR 0003)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts.bundle import AgentBundle
from portagent.contracts.errors import ApprovalError
from portagent.contracts.run import RunResult
from portagent.core.files import write_text_atomic


def resumed_trace(prior: str | None, out_dir: Path | None, default: Path | None, store: Any) -> Path | None:
    """Where a resumed attempt writes its trace (and ``run.json`` beside it): the earlier attempts'
    folder, unless the resuming request names another one (``--out``): then the earlier attempts'
    trace is copied there first (atomically), so that folder holds the whole run, and the run store
    points at it for the attempts after. A folder that cannot be written → UsageError, nothing written."""
    if prior is None:
        return default
    old = Path(prior)
    if out_dir is None or out_dir.resolve() == old.parent.resolve():
        return old
    new = out_dir / "trace.jsonl"
    try:
        text = old.read_text(encoding="utf-8") if old.is_file() else ""
        write_text_atomic(new, text)
        from portagent.recording.journal import JOURNAL_DIR

        journals = old.parent / JOURNAL_DIR  # the earlier attempts' journals move with the run
        if journals.is_dir():
            (out_dir / JOURNAL_DIR).mkdir(parents=True, exist_ok=True)
            for f in sorted(journals.glob("attempt-*.jsonl")):
                shutil.copyfile(f, out_dir / JOURNAL_DIR / f.name)
        if (old.parent / "run.json").is_file():
            shutil.copyfile(old.parent / "run.json", out_dir / "run.json")
    except OSError as e:
        store.close()
        from portagent.contracts.errors import UsageError

        raise UsageError(
            f"--out {out_dir}: cannot write the resumed run there ({e.strerror or e}); "
            f"its earlier attempts are in {old.parent}"
        ) from None
    return new


def resume_blockers(bundle: AgentBundle) -> list[str]:
    """Tools whose effect a resumed attempt could repeat: they change something outside the run and the
    effect ledger does not guard them (no ``idempotency.required``). An interrupted run with such a tool
    is reported, never resumed: whether its effect happened before the process died is unknown."""
    safe = {"read", "compute", "prepare_change"}
    return sorted(
        name for name, t in bundle.all_tools().items() if t.effect not in safe and not t.idempotency.required
    )


def interrupted_result(prior: Any, blockers: list[str]) -> RunResult:
    key = prior.idempotency_key
    last = (prior.result or {}).get("error")
    return RunResult(
        run_id=prior.run_id,
        status="failed",
        stop_reason="interrupted",
        attempt=prior.attempt,
        trace_path=prior.trace_path,
        error=(
            f"run {prior.run_id} (idempotency key {key!r}) was interrupted: the process running attempt "
            f"{prior.attempt} died before it finished, and it is not resumed because "
            f"{', '.join(blockers)} can make effects the ledger does not guard (no idempotency.required), so "
            "a second attempt could repeat one. Check the effects of that attempt, then run the request "
            "again with a new --idempotency-key." + (f" (The attempt ended with: {last})" if last else "")
        ),
    )


@dataclass
class Resumption:
    """What a new attempt of a run starts from."""

    reason: str
    """Why there is a new attempt (``run.started.provider_details.resumed``, ``attempt.started``)."""
    previous_status: str
    """How the attempt before ended (``waiting_approval``, ``interrupted``)."""
    scope: str
    """The run's scope (approval cards and effects), kept from its first attempt."""
    kept: list[Any] = field(default_factory=list)
    """The exchanges to replay (``recording.journal.Kept``), in the order they were made."""
    journal: str | None = None
    """The journal they come from, relative to the run folder."""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    """The earlier attempts as ``run.json`` lists them."""
    invocation: dict[str, Any] | None = None
    """How the command line started the run (kept in ``run.json``)."""
    decided: list[str] = field(default_factory=list)
    """The approval cards decided since the attempt before."""


def plan_resume(prior: Any, bundle: AgentBundle, reason: str) -> Resumption:
    """Read the run folder of ``prior`` (a ``runstore.StoredRun``): its ``run.json`` (earlier attempts,
    how it was started) and the journal of its last attempt, up to where that attempt paused.

    Refused (``JournalError``, naming the file and how to start over) when the agent spec changed since
    (the journal holds answers to another agent) or the journal cannot bring the run back. A run that
    kept no journal (no run folder, or a folder from before journals) is run again from its input."""
    from portagent.recording.journal import JournalError, journal_file, replay_plan

    plan = Resumption(
        reason=reason, previous_status=prior.status, scope=prior.scope, decided=list(prior.pending)
    )
    if not prior.trace_path:
        return plan
    folder = Path(prior.trace_path).parent
    record: dict[str, Any] | None = None
    try:
        loaded = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        record = loaded if isinstance(loaded, dict) else None
    except (OSError, ValueError):
        record = None
    if record is not None:
        spec_hash = (record.get("manifest") or {}).get("spec_hash")
        if spec_hash and spec_hash != bundle.spec_hash:
            raise JournalError(
                f"cannot resume run {prior.run_id}: the agent spec changed since attempt {prior.attempt} "
                f"(spec hash {spec_hash[:12]} -> {bundle.spec_hash[:12]}), and its journal holds the model's "
                "answers to the agent as it was. Put the spec back to resume, or run the request again with "
                "a new --idempotency-key"
            )
        plan.attempts = [a for a in record.get("attempts") or [] if isinstance(a, dict)]
    plan.invocation = load_invocation(folder, prior.attempt)
    last = next((a for a in plan.attempts if a.get("attempt") == prior.attempt), None)
    path = journal_file(folder, prior.attempt)
    if last is not None and last.get("journal") is None:
        return plan  # that attempt kept no journal (it was not a direct run)
    if last is None and not path.exists():
        if prior.status == "waiting_approval" and record is not None and plan.attempts:
            raise JournalError(
                f"cannot resume run {prior.run_id}: its journal {path} is missing, so the model's earlier "
                "turns cannot be brought back as they were. Run the request again with a new "
                "--idempotency-key to start over"
            )
        return plan  # a run from before journals, or one that died before its journal was opened
    kept, _ = replay_plan(
        path, run_id=prior.run_id, attempt=prior.attempt, record=last.get("journal") if last else None
    )
    plan.kept = kept
    plan.journal = path.relative_to(folder).as_posix()
    return plan


def supersede_stale_cards(scope: str, pending: list[str], attempt: int, status: str) -> list[str]:
    """After a resumed attempt: the run's cards that are still open (pending, or decided and never
    used) but were not asked for again by this attempt can no longer apply — the run went on without
    that call. They move to ``superseded`` with the reason. Returns their ids."""
    from portagent.contracts.errors import ApprovalError
    from portagent.tools.approvals import ApprovalStore

    store = ApprovalStore()
    moved: list[str] = []
    try:
        for card in store.list(scope=scope):
            if card.status not in ("pending", "approved", "edited") or card.approval_id in pending:
                continue
            if store.consumed_by(card.approval_id) is not None:
                continue
            reason = (
                f"attempt {attempt} of run {card.run_id} ({status}) did not make this call again"
                if card.status == "pending"
                else f"attempt {attempt} of run {card.run_id} ({status}) did not make this call, so the "
                f"{card.status} decision was never used"
            )
            try:
                store.supersede(card.approval_id, reason)
                moved.append(card.approval_id)
            except ApprovalError:
                continue
    finally:
        store.close()
    return moved


def load_invocation(folder: Path, attempt: int) -> dict[str, Any] | None:
    """How the command line started a run: from its ``run.json``, else from the header of its latest
    journal (written when an attempt starts, so a run whose process died still has it)."""
    try:
        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        if isinstance(record, dict) and isinstance(record.get("invocation"), dict):
            return dict(record["invocation"])
    except (OSError, ValueError):
        pass
    for header in _journal_headers(folder, attempt):
        if isinstance(header.get("invocation"), dict):
            return dict(header["invocation"])
    return None


def resume_base_url(
    run_id: str, stored: str | None, given: str | None, variable: str | None, from_env: str | None
) -> str | None:
    """The base URL ``portagent resume`` calls for a ``--live`` run: ``stored`` as ``run.json`` kept it,
    else (when credentials it carried were masked there, as they always are) the same endpoint with its
    credentials from ``given`` (``resume --base-url``) or ``from_env`` (the provider's base-URL
    ``variable``). ``given`` for another endpoint, or masked credentials and no URL to take them from:
    ``UsageError`` (exit 2), naming the endpoint without its credentials and how to give them."""
    from portagent.contracts.errors import UsageError
    from portagent.runtime.provenance import same_endpoint, shown_url, withheld_credentials

    for url, what in ((given, "--base-url"), (from_env, variable)):
        try:
            shown_url(url or "")
        except ValueError as e:  # urlsplit: a bad IPv6 host or port
            if what == "--base-url":
                raise UsageError(f"--base-url: not a URL portagent can call ({e})") from None
            from_env = None  # a variable the run cannot use is no source of credentials
    if given:
        if stored and not same_endpoint(stored, given):
            raise UsageError(
                f"--base-url {shown_url(given)} is not the endpoint run {run_id} was started with "
                f"({shown_url(stored)}): a run is resumed against its own endpoint (its journal holds that "
                "endpoint's answers); give that URL, or run the request again with a new --idempotency-key"
            )
        return given
    if not withheld_credentials(stored):
        return stored
    assert stored is not None
    if from_env and same_endpoint(stored, from_env):
        return from_env
    where = f"{variable} (set to that endpoint's URL)" if variable else "the environment"
    raise UsageError(
        f"run {run_id} was started with --base-url {shown_url(stored)} carrying credentials "
        "(user:password@ or a key in its query), which portagent never stores; give that URL again, "
        f"credentials and all: portagent resume {run_id} --base-url 'URL', or set it in {where}"
    )


A2A_SCOPE = "run:a2a:"
"""Scope prefix of the run behind an A2A task (``a2a serve`` keys it ``a2a:<task id>``)."""


def next_step(card: Any, runs_db: Path | None = None) -> str:
    """The one step that carries on what asked for ``card`` once it is decided. It depends on where the
    card came from, which its scope says: an A2A task's run (``run:a2a:<task>``) goes on when the caller
    sends a message on the task; a run the command line started (its folder records how) by
    ``portagent resume``; a run started through the API by the same request with the same key; a router
    execution by the same ``portagent route --execute`` request; an eval run is never resumed; anything
    else is an ``mcp serve`` namespace, where the client calls the tool again — there is no run to
    resume. ``runs_db``: the run store of the state folder the card is in (default: ``$PORTAGENT_HOME``'s)."""
    scope = str(card.scope or "")
    if scope.startswith(A2A_SCOPE):
        return f"send any message on A2A task {scope[len(A2A_SCOPE) :]} to resume its run"
    if scope.startswith("route:"):
        return "send the same 'portagent route --execute' request again"
    if scope.startswith("eval:"):  # an eval run clears its scope's cards before it runs (eval_execute.py)
        return "nothing: an eval run is judged as it stopped, and running the case again starts it over"
    if not scope.startswith("run:"):
        return f"the MCP client calls {card.tool} again with the same arguments"
    from portagent.runtime.runstore import RunStore

    if runs_db is not None and not runs_db.is_file():
        return f"resume the run: portagent resume {card.run_id}"
    store = RunStore(runs_db)
    try:
        prior = store.by_run_id(card.run_id)
    finally:
        store.close()
    if prior is None:
        return f"resume the run: portagent resume {card.run_id}"
    folder = Path(prior.trace_path).parent if prior.trace_path else None
    if folder is not None and load_invocation(folder, prior.attempt) is not None:
        return f"resume the run: portagent resume {card.run_id}"
    return f"send the same request again with the same idempotency key {prior.idempotency_key!r}"


def require_decided(pending: list[str]) -> None:
    """Refuse to resume a paused run while one of its approvals is still pending (or unknown)."""
    from portagent.tools.approvals import ApprovalStore

    approvals = ApprovalStore()
    try:
        for approval_id in pending:
            card = approvals.get(approval_id)
            if card.status == "pending":  # (an unknown id raises ApprovalError)
                raise ApprovalError(
                    f"still waiting for approval {approval_id}: decide it with "
                    f"'portagent approvals approve|reject|edit {approval_id}', then {next_step(card)}"
                )
    finally:
        close = getattr(approvals, "close", None)
        if close:
            close()


REQUEST_FIELDS: dict[str, str] = {
    "input": "input",
    "provider": "provider",
    "session_id": "session",
    "env": "env",
    "scopes": "scopes",
    "actor": "actor",
    "context": "run context",
    "request_id": "request id",
    "case_id": "eval case",
    "repeat": "eval repeat",
}
"""The request's fields a resumed attempt must share with the run it continues (every ``RunRequest``
field but the key itself), and how a refusal names each. The input and the provider decide which
exchanges the journal can replay and which call the decided card was for; the session frames the input;
env, scopes, actor and context change what the policy allows; the ids and eval fields are what the
caller said this request is."""

_SHOWN = frozenset({"provider", "env", "scopes", "actor", "case_id", "repeat"})
"""Fields short and unsecret enough to quote both values of in the refusal (never the input or context)."""


def refuse_another_request(
    prior: Any, request: Any, endpoint: Any, invocation: dict[str, Any] | None
) -> None:
    """Refuse (``UsageError``, exit 2) a request that reuses the idempotency key of a paused or interrupted
    run but is not the same request. Resuming it would replay the journal of the old request into the new
    one, or ask the model again with the new one and apply the old request's decided card to whatever it
    answers — the approved effect could run for a request nobody approved it for. Called before anything is
    written: no attempt, no trace line, no card used.

    What counts, each compared like for like with what the run recorded:
    - the request the runner was given (``RunRequest`` minus the key: input — as framed by a session —,
      provider, session, env, scopes, actor, context, request id, eval case and repeat) against
      ``run.json``'s ``manifest.request``, else the journal header's provider;
    - the endpoint: its source (emulator, live, endpoint, replay) and, for a live or custom endpoint, its
      URL, against the manifest; and the emulator script's hash when both are known;
    - when both this request and the run were started by the command line (``invocation``): the agent
      spec file, the provider, the request as typed, the endpoint (emulator script file, live URL) and the
      SDK options (``--stream``, ``--openai-api``).
    The approver does not count (``portagent resume --approver`` may change who decides new cards), nor
    does ``--out``; the agent spec's content is checked by :func:`plan_resume` (spec hash). A run that kept
    no run folder recorded nothing to compare, so only its key identifies it."""
    from portagent.contracts.errors import UsageError
    from portagent.core.secrets import mask_data
    from portagent.runtime.provenance import shown_url

    if not prior.trace_path:
        return
    folder = Path(prior.trace_path).parent
    manifest: dict[str, Any] = {}
    try:
        loaded = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        if isinstance(loaded, dict) and isinstance(loaded.get("manifest"), dict):
            manifest = loaded["manifest"]
    except (OSError, ValueError):
        pass
    differs: list[str] = []

    def shown(value: Any) -> str:
        return (
            "none" if value is None else ",".join(map(str, value)) if isinstance(value, list) else str(value)
        )

    def note(what: str) -> None:
        if what not in differs:
            differs.append(what)

    def compare_requests(old: Any, new: dict[str, Any]) -> None:
        if not isinstance(old, dict):
            return
        old, new = mask_data(old), mask_data(new)
        for name, label in REQUEST_FIELDS.items():
            if old.get(name) == new.get(name):
                continue
            if name in _SHOWN:
                note(f"a different {label} ({shown(old.get(name))}; this request: {shown(new.get(name))})")
            else:
                note(f"a different {label}")

    now = request.model_dump(mode="json", exclude={"idempotency_key"}, exclude_defaults=True)
    if manifest:
        compare_requests(manifest.get("request"), now)
        source = manifest.get("source")
        if source and source != endpoint.source:
            note(f"a different endpoint ({source}; this request: {endpoint.source})")
        elif endpoint.source in ("live", "endpoint"):
            url = shown_url(endpoint.base_url) if endpoint.base_url else None
            if manifest.get("base_url") != url:
                note(f"a different endpoint URL ({manifest.get('base_url')}; this request: {url})")
        was_script, script = manifest.get("emulator_script_hash"), endpoint.script_hash
        if was_script and script and was_script != script:
            note("a different emulator script")
    else:
        header = _journal_header(folder, prior.attempt)
        was = header.get("provider")
        if was and was != request.provider:
            note(f"a different provider ({was}; this request: {request.provider})")
    stored = load_invocation(folder, prior.attempt)
    if stored is not None and invocation is not None:
        if stored.get("agent") != invocation.get("agent"):
            note(
                f"a different agent spec file ({stored.get('agent')}; this request: {invocation.get('agent')})"
            )
        compare_requests(
            {**(stored.get("request") or {}), "provider": stored.get("provider")},
            {**(invocation.get("request") or {}), "provider": invocation.get("provider")},
        )
        # the stored endpoint had its credentials masked (run.json), this one has them: both are compared,
        # and named, without them
        was_at, now_at = _shown_endpoint(stored.get("endpoint")), _shown_endpoint(invocation.get("endpoint"))
        if was_at != now_at and not any(d.startswith("a different endpoint") for d in differs):
            note(f"a different endpoint ({was_at}; this request: {now_at})")
        if (stored.get("options") or {}) != (invocation.get("options") or {}):
            note(
                f"different SDK options ({stored.get('options')}; this request: {invocation.get('options')})"
            )
    if differs:
        key, run_id = prior.idempotency_key, prior.run_id
        raise UsageError(
            f"idempotency key {key!r} belongs to run {run_id} ({prior.status}), started with "
            f"{', '.join(differs)}; use another key for this request, or `portagent resume {run_id}` to "
            "continue that run as it was started"
        )


def _shown_endpoint(endpoint: Any) -> dict[str, Any]:
    """An invocation's endpoint as compared and named: a ``base_url`` as its server root without
    credentials or query (``provenance.shown_url``), so a URL masked in ``run.json`` and the same URL
    typed again with its credentials are one endpoint, and a refusal never prints a password."""
    from portagent.adapters.port import endpoint_root
    from portagent.runtime.provenance import shown_url

    shown = dict(endpoint) if isinstance(endpoint, dict) else {}
    if isinstance(shown.get("base_url"), str):
        try:
            shown["base_url"] = endpoint_root(shown_url(shown["base_url"]))
        except ValueError:  # not a URL urlsplit reads (a bad port): compared, and named, masked
            from portagent.core.secrets import mask_data

            shown["base_url"] = mask_data(shown["base_url"])
    return shown


def _journal_header(folder: Path, attempt: int) -> dict[str, Any]:
    """The header of the latest journal of a run that wrote no ``run.json`` (its process died first)."""
    return next(_journal_headers(folder, attempt), {})


def _journal_headers(folder: Path, attempt: int) -> Iterator[dict[str, Any]]:
    """The readable headers of a run's journals, the latest attempt's first."""
    from portagent.recording.journal import journal_file

    for n in range(attempt, 0, -1):
        try:
            with journal_file(folder, n).open("rb") as f:
                header = json.loads(f.readline())
        except (OSError, ValueError):
            continue
        if isinstance(header, dict):
            yield header
