"""The runner's side of the run journal (ADR 0007): opening the journal and its proxy for an attempt,
the earlier attempt's results a resume reuses, how the run was started, and keeping a paused run
without an idempotency key findable by ``portagent resume``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from portagent.adapters.port import Endpoint
from portagent.contracts.run import RunResult
from portagent.contracts.trace import parse_event

if TYPE_CHECKING:
    from portagent.contracts.bundle import AgentBundle
    from portagent.runtime.resume import Resumption
    from portagent.runtime.runner import RunConfig


@dataclass
class RunJournalSeam:
    journal: Any
    proxy: Any
    endpoint: Endpoint
    folder: Path

    def close(self) -> dict[str, Any]:
        self.proxy.stop()
        summary: dict[str, Any] = self.journal.close(self.folder)
        return summary


DEFAULT_UPSTREAMS = {
    "openai": "https://api.openai.com",
    "claude": "https://api.anthropic.com",
    "anthropic": "https://api.anthropic.com",
    "adk": "https://generativelanguage.googleapis.com",
}
"""Where each vendor's SDK sends model calls when no base URL is set (the journal forwards there)."""


def default_upstream(provider: str, bundle: AgentBundle | None) -> str | None:
    """Where the journal forwards a run's model calls when no base URL is set; None when no one host
    can be named (no journal then: resume runs the input again, as for a run that kept none).

    A LangGraph run talks to its chat model's vendor: the one vendor every agent of the spec uses (agents
    on different vendors go to different hosts). Gemini through Vertex AI picks a regional host itself."""
    import os

    wire: str | None = provider
    if provider == "langgraph":
        if bundle is None:
            return None
        from portagent.adapters.langgraph.rules import wires

        spoken = wires(bundle)
        wire = spoken[0] if len(spoken) == 1 else None
    if wire == "adk" and os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true"):
        return None
    return DEFAULT_UPSTREAMS.get(wire or "")


def open_journal(
    config: RunConfig,
    out_dir: Path | None,
    run_id: str,
    attempt: int,
    provider: str,
    resumption: Resumption | None,
    bundle: AgentBundle | None = None,
) -> RunJournalSeam | None:
    """The run journal and its proxy, for a direct run with a run folder (ADR 0007); the endpoint the
    SDK is then given points at the proxy. Primed with the exchanges a resumed attempt replays."""
    import dataclasses

    endpoint = config.endpoint
    if not config.journal or out_dir is None or endpoint.mode != "direct":
        return None
    # The proxy forwards the SDK's own paths (``/v1/responses`` …): the upstream is a server root.
    upstream = endpoint.base_url or default_upstream(provider, bundle)
    if upstream is None:
        return None
    from portagent.core.secrets import mask_data
    from portagent.recording.http_proxy import HttpProxy
    from portagent.recording.journal import RunJournal, journal_file
    from portagent.runtime.provenance import shown_url

    if attempt == 1:  # a folder written again by a new run: an earlier run's later attempts do not belong
        for stale in journal_file(out_dir, 1).parent.glob("attempt-*.jsonl"):
            stale.unlink(missing_ok=True)
    journal = RunJournal(
        path=journal_file(out_dir, attempt),
        header={
            "run_id": run_id,
            "attempt": attempt,
            "provider": provider,
            "upstream": shown_url(upstream),
            # masked as run.json masks it: a --base-url may carry credentials (``u:pass@``, ``?token=``)
            **(
                {"invocation": mask_data(invocation)}
                if (invocation := invocation_for(config, resumption))
                else {}
            ),
        },
        replay=list(resumption.kept) if resumption is not None else [],
    ).open()
    from portagent.runtime.request_limits import request_gate

    proxy = HttpProxy(
        mode="journal",
        upstream=upstream,
        journal=journal,
        name="portagent-journal",
        gate=request_gate(provider),  # per-request rate limits and Retry-After (eval --live, issue 17)
    )
    url = proxy.start_shared()
    return RunJournalSeam(journal, proxy, dataclasses.replace(endpoint, journal_url=url), out_dir)


def earlier_results(trace_path: Path, attempt: int) -> Any:
    """The results of the calls the attempt before ran, from the run's trace (its last attempt's
    events: a trace cut short by a dead process is read as far as it is whole)."""
    from portagent.tools.context import EarlierResults

    events: list[Any] = []
    try:
        lines = trace_path.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            e = parse_event(json.loads(line))
        except ValueError:
            continue
        if e.type == "run.started":
            events = []
        events.append(e)
    return EarlierResults.from_events(attempt, events)


def invocation_for(config: RunConfig, resumption: Resumption | None) -> dict[str, Any] | None:
    return (resumption.invocation if resumption is not None else None) or config.invocation


def register_paused(
    run_id: str, scope: str, trace_path: Path | None, result: RunResult, pending: list[str]
) -> None:
    """A run without an idempotency key that waits for approval is kept in the run store under
    ``run:<run_id>``, so ``portagent resume RUN_ID`` can continue it."""
    from portagent.runtime.runstore import RunStore

    store = RunStore()
    try:
        key = f"run:{run_id}"
        store.claim(key, run_id, scope, str(trace_path) if trace_path else None)
        store.finish(key, "waiting_approval", result.model_dump(mode="json"), pending)
    finally:
        store.close()
