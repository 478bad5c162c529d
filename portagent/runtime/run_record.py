"""What a finished run adds up to: its usage and cost, how a failure is named, and its ``run.json`` record
(the manifest a replay, a comparison and ``--reuse`` read). The runner (``runner.py``) drives a run;
this module only reads what the run left in its session and trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from portagent.adapters.base import REGISTRY, Adapter, AdapterOutcome
from portagent.adapters.port import ApprovalPause, BudgetStop, RunSession, unwrap_signal
from portagent.contracts.errors import ProviderError
from portagent.contracts.run import AttemptRecord, RunManifest, RunRecord, RunResult, Usage
from portagent.core.clock import iso
from portagent.core.versions import PORTAGENT_VERSION
from portagent.runtime.journaling import invocation_for
from portagent.runtime.provenance import labelled

if TYPE_CHECKING:
    from portagent.runtime.resume import Resumption
    from portagent.runtime.runner import RunConfig


def usage_of(events: list[Any]) -> Usage:
    """The run's usage: the sum of its ``model.call`` events (usage lives only there)."""
    calls = [e for e in events if e.type == "model.call"]
    return Usage(
        input_tokens=sum(e.input_tokens for e in calls),
        output_tokens=sum(e.output_tokens for e in calls),
        cache_read_tokens=sum(e.cache_read_tokens for e in calls),
        cache_write_tokens=sum(e.cache_write_tokens for e in calls),
        reasoning_tokens=sum(e.reasoning_tokens for e in calls),
        model_calls=len(calls),
    )


def run_cost(session: RunSession, outcome: AdapterOutcome) -> tuple[float | None, str]:
    """The run's cost and where it comes from: the vendor's own figure, computed from the price table for
    every model call, or unknown when some call's model has no price."""
    tool_cost = session.budget.tool_cost_usd
    costs = session.model_costs
    if outcome.vendor_cost_usd is not None:
        return round(outcome.vendor_cost_usd + tool_cost, 8), "vendor"
    if not costs:
        return round(tool_cost, 8), "computed"
    known = [c for c in costs if c is not None]
    if len(known) == len(costs):
        return round(sum(known) + tool_cost, 8), "computed"
    return None, "unknown"


def failure_of(session: RunSession, e: BaseException) -> tuple[str, str, str | None]:
    """``(status, stop_reason, error)`` for a run the adapter left by an exception: drift on a replay, a
    budget stop or an approval pause (signals, not errors), else a provider or SDK error (recorded as an
    ``error`` event)."""
    if session.endpoint.mode == "replay":
        from portagent.recording.vcr_cassette import describe_mismatch, find_mismatch

        mismatch = find_mismatch(e)
        if mismatch is not None:
            message = "cassette drift: " + describe_mismatch(mismatch)
            if session.cassette_report is not None:
                session.cassette_report.drift = message
            session.record_error("CassetteDrift", message)
            return "failed", "cassette_drift", message
    sig = unwrap_signal(e) or session.stop
    if isinstance(sig, BudgetStop):
        return "budget_exhausted", sig.limit, None
    if isinstance(sig, ApprovalPause):
        return "waiting_approval", "approval_pending", None
    retryable = bool(getattr(e, "retryable", False))
    message = str(e) or type(e).__name__
    session.record_error(type(e).__name__, message, retryable=retryable)
    reason = "provider_error" if isinstance(e, ProviderError) else "sdk_error"
    return "failed", reason, message


def trace_ref(trace_path: Path | None, mode: str) -> str | None:
    """Recorded and replayed runs name their trace relative to run.json (cassettes move between machines)."""
    if trace_path is None:
        return None
    return trace_path.name if mode in ("record", "replay") else str(trace_path)


def approval_decisions(events: list[Any]) -> list[dict[str, Any]]:
    """The run's approval decisions as scripted-approver entries (keyed by tool and args_hash)."""
    calls = {e.call_id: e for e in events if e.type == "tool.call"}
    verbs = {"approved": "approve", "edited": "edit", "rejected": "reject"}
    out = []
    for e in events:
        if e.type == "approval.resolved" and e.status in verbs and e.call_id in calls:
            c = calls[e.call_id]
            entry: dict[str, Any] = {"tool": c.tool, "args_hash": c.args_hash, "decision": verbs[e.status]}
            if e.status == "edited" and e.effective_args is not None:
                entry["args"] = e.effective_args
            if e.reviewer:
                entry["reviewer"] = e.reviewer
            if e.note:
                entry["note"] = e.note
            out.append(entry)
    return out


def make_record(
    result: RunResult,
    session: RunSession,
    config: RunConfig,
    adapter: Adapter,
    resumption: Resumption | None,
    *,
    attempt: int,
    started_at: str,
    journal_summary: Any,
    events: list[Any],
) -> RunRecord:
    """The run's ``run.json``: its result, the manifest (what ran, on what, from which inputs) and the
    attempts so far."""
    bundle, request, provider = session.bundle, session.request, session.provider
    _, provenance = labelled(provider, config.endpoint, config.recorded, bundle)  # idempotent: labelled
    report = session.cassette_report
    return RunRecord(
        result=result,
        manifest=RunManifest(
            portagent_version=PORTAGENT_VERSION,
            provider=provider,
            sdk=REGISTRY[provider].package,
            sdk_version=adapter.sdk_version(),
            cli_version=adapter.cli_version(),
            model=session.model_for(),
            agent=bundle.root,
            agent_version=bundle.spec.version,
            spec_hash=bundle.spec_hash,
            tool_hashes=bundle.tool_hashes(),
            tool_versions={n: t.version for n, t in sorted(bundle.all_tools().items())},
            policy_hash=bundle.policy_hash,
            source=config.endpoint.source,
            **provenance,
            mode=config.endpoint.mode,
            recorded_at=config.recorded_at or iso(session.clock.now()),
            emulator_script_hash=config.endpoint.script_hash,
            case_id=request.case_id,
            repeat=request.repeat,
            request=request.model_dump(mode="json", exclude={"idempotency_key"}, exclude_defaults=True),
            approvals=approval_decisions(events),
            cassette=report.as_details() if report is not None else {},
        ),
        attempts=[
            *(resumption.attempts if resumption is not None else []),
            AttemptRecord(
                attempt=attempt,
                status=result.status,
                stop_reason=result.stop_reason,
                started_at=started_at,
                resumed=resumption.reason if resumption is not None else None,
                journal=journal_summary,
            ).model_dump(mode="json"),
        ],
        invocation=invocation_for(config, resumption),
    )
