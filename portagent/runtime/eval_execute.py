"""Making one planned run, in whatever process runs it (a pool worker, a Ray task, the eval process
itself): ``execute`` loads the agent and its cassette or emulator, runs it through ``runtime.runner`` and
scores it; ``finished`` reads back a run an interrupted eval already made. The pool that hands runs to
worker processes is ``runtime/eval_pool.py`` (the workers themselves: ``runtime/eval_workers.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from portagent.adapters.base import REGISTRY
from portagent.contracts.errors import PortagentError, RecordingError
from portagent.evals.scoring import Provenance, score_run
from portagent.runtime.eval_plan import (
    RunOutcome,
    RunSignals,
    RunTask,
    approver_for,
    options_extra,
    request_for,
    script_hash,
)
from portagent.runtime.keys import live_key

_BUNDLES: dict[Path, tuple[dict[Path, tuple[int, ...] | None], Any]] = {}
_EMULATORS: dict[Path, Any] = {}
_STACK = contextlib.ExitStack()


def _bundle(path: Path) -> Any:
    """The agent at ``path``, loaded once per version of the files it was read from (its specs, tools files
    and policies). Kept by path alone, a process that records, sees the spec edited and records again (a
    notebook, a program calling the CLI) made the second recording with the first's spec, while its
    verifying replay, in a fresh worker, read the new one: every run failed as a drift."""
    hit = _BUNDLES.get(path)
    if hit is not None and all(_file_version(f) == v for f, v in hit[0].items()):
        return hit[1]
    from portagent.contracts.bundle import load_agent

    bundle = load_agent(path)
    _BUNDLES[path] = ({f: _file_version(f) for f in _read_from(bundle)}, bundle)
    return bundle


def _read_from(bundle: Any) -> set[Path]:
    """The files ``load_agent`` read for ``bundle``: each agent's spec, tools files and policy file."""
    from portagent.contracts.bundle import _tool_file

    files: set[Path] = set()
    for node in bundle.agents.values():
        if node.path is not None:
            files.add(node.path)
            files.update(_tool_file(node.path.parent, ref) for ref in node.spec.tool_files)
        if node.policy_path is not None:
            files.add(node.policy_path)
    return files


def _file_version(path: Path) -> tuple[int, ...] | None:
    """What changes when the file is rewritten (a rewrite within one clock tick too), None when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size)


def _emulator(path: Path) -> Any:
    """One emulator per script in this process, started on first use."""
    if path not in _EMULATORS:
        from portagent.emulator import load_script, serve

        _EMULATORS[path] = _STACK.enter_context(serve(load_script(path)))
    return _EMULATORS[path]


def close_emulators() -> None:
    """Stop the emulators this process started."""
    _STACK.close()
    _EMULATORS.clear()


_SCOPES_MADE: set[str] = set()
"""The run scopes this process has made a run of (``clear_run_state``)."""


def clear_run_state(scope: str) -> None:
    """Forget what a previous run with the same scope left: its effects, its approval cards and, when this
    process made it, the state its handlers keep in their modules (``forget_handler_modules``)."""
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.ledger import EffectLedger

    if scope in _SCOPES_MADE:
        forget_handler_modules()
    _SCOPES_MADE.add(scope)

    ledger = EffectLedger()
    try:
        ledger.clear_scope(scope)
    finally:
        ledger.close()
    approvals = ApprovalStore()
    try:
        approvals.clear_scope(scope)
    finally:
        approvals.close()


def forget_handler_modules() -> None:
    """Take the modules portagent loaded from spec folders (handlers, the helpers they import) out of
    ``sys.modules``, so the next run imports them afresh, as a fresh worker process would.

    Why: a handler may keep state in its module (the support desk numbers tickets per run scope), and a
    scope is the same each time a planned run is made (suite, agent, case, provider, repeat). ``eval``
    makes each scope once per worker process, and its workers end with it; a process that makes the same
    scope again — the pytest plugin replaying a suite given both with ``--portagent-suite`` and a marker,
    an in-process eval or recording run twice from a test or a notebook — found the first run's state:
    the second replay sent ``TCK-0002`` where the cassette holds ``TCK-0001`` and failed as a drift, and a
    second recording would have written it into the cassette. A module imported from an installed package
    or ``PYTHONPATH`` is not a spec folder's and keeps its state (docs/reports.md)."""
    import sys

    from portagent.core.handler_folders import MARK

    for name, module in list(sys.modules.items()):
        if isinstance(getattr(module, "__dict__", {}).get(MARK), str):
            sys.modules.pop(name, None)


def execute(task: RunTask) -> RunOutcome:
    """Make one run and score it. Never raises for a run's own failure: it becomes a failed score."""
    t0 = time.perf_counter()
    try:
        output, latency, source, notes = asyncio.run(_make_run(task))
    except RecordingError as e:
        if task.mode == "replay":  # the recording is broken: no retry mends it, the eval names it
            return RecordingFailure.of(task, e, t0)
        return unrunnable(task, e.render(), t0)
    except PortagentError as e:
        return unrunnable(task, e.render(), t0)
    except Exception as e:  # an SDK or portagent bug: keep it visible, keep the eval going
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return unrunnable(task, f"run crashed: {detail}", t0)
    return scored(task, output.events, output.result, latency, source, notes, t0)


def scored(
    task: RunTask, events: list[Any], r: Any, latency: float | None, source: Any, notes: list[str], t0: float
) -> RunOutcome:
    started = next((e for e in events if e.type == "run.started"), None)  # the run's own label (issue 15)
    prov = Provenance(
        case_id=task.case.case_id,
        provider=task.provider,
        agent=task.agent.name,
        agent_version=task.agent.version,
        source=started.source if started is not None else source,
        recorded_source=started.recorded_source if started is not None else None,
        repeat=task.repeat,
        run_id=r.run_id,
    )
    try:  # args.expected is normalised with each tool's input schema, as the gateway did the calls
        schemas = {n: t.input_schema for n, t in _bundle(task.agent.path).all_tools().items()}
    except (OSError, PortagentError):
        schemas = None
    score = score_run(
        events, task.case, task.thresholds, latency_ms=latency, provenance=prov, tool_schemas=schemas
    )
    if notes:
        score = score.model_copy(update={"warnings": [*score.warnings, *notes]})
    error = None
    if r.status == "failed":
        error = f"{r.stop_reason}: {r.error}" if r.error else r.stop_reason
        score = score.model_copy(update={"notes": [f"run failed ({error})", *score.notes]})
    stale = _stale_script(task, score, notes)
    if stale is not None:
        score, error = stale
    return RunOutcome(
        task.index,
        score,
        error,
        time.perf_counter() - t0,
        os.getpid(),
        r.final_output,
        _signals(task, events, r),
    )


def _stale_script(task: RunTask, score: Any, notes: list[str]) -> tuple[Any, str] | None:
    """A replay whose emulator script changed since the recording (``evals.drift.script_changed``, named in
    ``notes``) is a stale recording, scored as a drift: it replays cleanly — the agent sends what it sent —
    but on the scripted model's old answers, so its pass would gate the agent on answers the current script
    no longer gives. As a drift it is not judged on its merits, the gate names it with its
    ``record --drifted`` line, and ``record --drifted`` (which looks for ``cassette_drift``) re-records it."""
    from portagent.evals.drift import CHANGED_PREFIX, SCRIPT_CHANGE, script_drift
    from portagent.evals.scoring import UNMEASURED

    if (
        task.mode != "replay"
        or CHANGED_PREFIX + SCRIPT_CHANGE not in notes
        or score.issue == "cassette_drift"
    ):
        return None
    why = script_drift(str(task.emulator_script))
    update = {
        "issue": "cassette_drift",
        "passed": False,
        "drift": why,
        "notes": [UNMEASURED["cassette_drift"]],
    }
    return score.model_copy(update=update), f"cassette_drift: {why}"


_SCRIPT_HASHES: dict[tuple[Path, int, int], str] = {}


def _script_hash(path: Path | None) -> str | None:
    """The emulator script's hash as recordings keep it (``eval_plan.script_hash``), read once per version
    of the file in this process (keyed by its modification time and size), not once per replay."""
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _SCRIPT_HASHES:
        _SCRIPT_HASHES[key] = script_hash(path)
    return _SCRIPT_HASHES[key]


_RETRY_AFTER = re.compile(r"retry-after ([0-9]+(?:\.[0-9]+)?) s")
_RATE_LIMITED = frozenset({"http_429", "http_503", "http_529"})


def _signals(task: RunTask, events: list[Any], r: Any) -> RunSignals:
    """What the scheduler of a live eval reads from a run (``runtime.limits``). A ``Retry-After`` is read
    from the ``error`` events the adapters' HTTP hook writes (``adapters._shared.http_error_hook``)."""
    errors = [e for e in events if e.type == "error"]
    http = [e for e in errors if e.error_type.startswith("http_")]
    hints = [float(m.group(1)) for e in http if (m := _RETRY_AFTER.search(e.message))]
    calls = [e for e in events if e.type == "model.call"]
    try:
        tools = _bundle(task.agent.path).all_tools()
    except (OSError, PortagentError):
        tools = {}
    called = {e.tool for e in events if e.type == "tool.call"}
    safe = all(name in tools and tools[name].effect in ("read", "compute") for name in called)
    return RunSignals(
        requests=len(calls) + len(http),
        tokens=sum(e.input_tokens + e.output_tokens for e in calls),
        rate_limited=any(e.error_type in _RATE_LIMITED for e in http),
        retry_after_s=max(hints) if hints else None,
        retryable=r.status == "failed"
        and r.stop_reason == "provider_error"
        and bool(errors)
        and errors[-1].retryable,
        retry_safe=safe,
    )


def finished(task: RunTask, prints: Any = None) -> RunOutcome | None:
    """The outcome of a run an earlier, interrupted eval already finished into this results folder
    (``eval --resume``), scored again from its ``trace.jsonl``; None when it must run (no complete
    ``run.json`` — it is written last, atomically —, or one made by another agent spec, policy, tool set,
    request (the case's input, context, thread), provider, repeat or mode; or, given ``prints`` (a
    ``reuse.Fingerprints``), one whose stored inputs hash differs from the task's: handler code, the
    approver's decisions, the cassette or script)."""
    from pydantic import ValidationError

    from portagent.contracts.run import RunRecord
    from portagent.tracing.recorder import read_trace

    if task.out_dir is None:
        return None
    t0 = time.perf_counter()
    try:
        record = RunRecord.model_validate_json((task.out_dir / "run.json").read_text(encoding="utf-8"))
        events = read_trace(task.out_dir / "trace.jsonl")
        bundle = _bundle(task.agent.path)
    except (OSError, ValueError, ValidationError, PortagentError):
        return None
    m = record.manifest
    live = ("live", "endpoint") if task.mode == "live" else (task.mode,)
    mode_ok = m.mode == "replay" if task.mode == "replay" else (m.mode != "replay" and m.source in live)
    request = request_for(task.case, task.provider, task.repeat, bundle)
    same = (m.provider, m.case_id, m.repeat, m.spec_hash, m.policy_hash, m.tool_hashes, m.request) == (
        task.provider,
        task.case.case_id,
        task.repeat,
        bundle.spec_hash,
        bundle.policy_hash,
        bundle.tool_hashes(),
        request.model_dump(mode="json", exclude={"idempotency_key"}, exclude_defaults=True),
    )
    starts = [i for i, e in enumerate(events) if e.type == "run.started"]
    if not (mode_ok and same and starts and events[-1].type == "run.completed"):
        return None
    if prints is not None:  # the fuller hash --reuse keeps, where the run left one
        from portagent.runtime.reuse import stored_key

        stored = stored_key(task.out_dir)
        if stored is not None and stored != prints.key(task):
            return None
    latency = record.result.duration_ms if task.mode == "replay" else None
    notes: list[str] = []
    if task.mode == "replay" and task.cassette is not None:  # keep the tool-version warnings (issue 15)
        from portagent.evals.tool_versions import (
            current_tools,
            read_folder_tools,
            run_warnings,
            unversioned_changes,
        )

        recorded_tools = read_folder_tools(task.cassette)
        if recorded_tools is not None:
            notes = run_warnings(
                unversioned_changes(recorded_tools, current_tools(bundle), since="the recording")
            )
    if task.mode == "replay":  # a script changed since the recording: the carried run is stale too
        from portagent.evals.drift import CHANGED_PREFIX, SCRIPT_CHANGE, script_changed

        if script_changed(m, _script_hash(task.emulator_script)):
            notes.append(CHANGED_PREFIX + SCRIPT_CHANGE)
    return scored(task, events[starts[-1] :], record.result, latency, m.source, notes, t0)


def unrunnable(task: RunTask, message: str, t0: float) -> RunOutcome:
    prov = Provenance(
        case_id=task.case.case_id,
        provider=task.provider,
        agent=task.agent.name,
        agent_version=task.agent.version,
        source=None,
        repeat=task.repeat,
    )
    score = score_run([], task.case, task.thresholds, provenance=prov)
    note = f"run could not be made: {message}"
    score = score.model_copy(update={"notes": [note, *score.notes], "issue": "run_error", "passed": False})
    return RunOutcome(task.index, score, message, time.perf_counter() - t0, os.getpid())


@dataclass
class RecordingFailure(RunOutcome):
    """A replay whose recording could not be read (a cassette, ``run.json`` or ``trace.jsonl`` edited by
    hand, truncated, of another format): nothing was run. Not a run error — those are retried (exit 3,
    docs/reports.md) and a broken file never heals — so the eval ends on it as a ``RecordingError`` (exit 1,
    ``_cli.eval``) instead of scoring it. The eval's pre-flight parses every cassette; this is what a file
    that broke after it, or a problem only the replay meets, comes back as."""

    recording: str = ""
    """The ``RecordingError``, on one line (it names the file)."""

    @classmethod
    def of(cls, task: RunTask, error: RecordingError, t0: float) -> RecordingFailure:
        line = " ".join(error.render().split())
        base = unrunnable(task, line, t0)
        return cls(base.index, base.score, base.error, base.wall_s, base.pid, recording=line)


async def _make_run(task: RunTask) -> tuple[Any, float | None, Any, list[str]]:
    """(RunOutput, recorded latency or None, source, warnings such as an SDK version change)."""
    from dataclasses import replace

    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.runtime.runner import RunConfig, arun_full

    bundle = _bundle(task.agent.path)
    request = request_for(task.case, task.provider, task.repeat, bundle)
    approver = approver_for(task.case, task.approver)
    clear_run_state(task.scope)
    if task.mode == "replay":
        from portagent.runtime.replay import approval_notes, load_recorded, replay_config, version_changes

        assert task.cassette is not None
        recorded = load_recorded(task.cassette)
        config, _ = replay_config(task.cassette, recorded, out_dir=task.out_dir, approver=approver)
        config.scope = task.scope
        extra = options_extra(task.case, task.provider, task.repeat, bundle)
        if extra:
            config.options = replace(config.options, extra={**config.options.extra, **extra})
        output = await arun_full(bundle, request, config)
        changed = [f"recorded with another version: {c}" for c in version_changes(recorded.record)]
        changed += approval_notes(config)
        from portagent.evals.tool_versions import (  # a tool changed without a version bump (issue 15)
            current_tools,
            recorded_tools,
            run_warnings,
            unversioned_changes,
        )

        changed += run_warnings(
            unversioned_changes(
                recorded_tools(recorded.record.manifest, recorded.events),
                current_tools(bundle),
                since="the recording",
            )
        )
        from portagent.evals.drift import CHANGED_PREFIX, SCRIPT_CHANGE, recording_changes, script_changed

        current = _script_hash(task.emulator_script)
        if output.result.stop_reason == "cassette_drift":  # name what changed (issue 15)
            changed += [
                CHANGED_PREFIX + c
                for c in recording_changes(
                    recorded.record.manifest,
                    spec_hash=bundle.spec_hash,
                    policy_hash=bundle.policy_hash,
                    tool_hashes=bundle.tool_hashes(),
                    request=request.model_dump(
                        mode="json", exclude={"idempotency_key"}, exclude_defaults=True
                    ),
                    script_hash=current,
                )
            ]
        elif script_changed(recorded.record.manifest, current):  # replays cleanly, on stale answers
            changed.append(CHANGED_PREFIX + SCRIPT_CHANGE)
        return output, recorded.record.result.duration_ms, recorded.record.manifest.source, changed
    if task.mode == "emulator":
        assert task.emulator_script is not None
        emu = _emulator(task.emulator_script)
        emu.reset()  # fault counters (times: N) start over for every run
        endpoint = Endpoint(
            source="emulator",
            mode="direct",
            base_url=emu.base_url,
            api_key=REGISTRY[task.provider].dummy_key,
            script_hash=script_hash(task.emulator_script),
        )
    else:
        endpoint = Endpoint(source="live", mode="direct", api_key=live_key(task.provider, bundle))
    options = RunOptions(extra=options_extra(task.case, task.provider, task.repeat, bundle))
    output = await arun_full(
        bundle,
        request,
        RunConfig(
            endpoint=endpoint, approver=approver, out_dir=task.out_dir, scope=task.scope, options=options
        ),
    )
    return output, None, endpoint.source, []
