"""Resuming a run: where a resumed attempt writes, which tools keep an interrupted run from being resumed,
and the result reported instead (ADR 0003, ADR 0007)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from portagent.contracts.bundle import AgentBundle
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
