"""The eval runner: every case × provider × repeat × agent version of a suite, scored (DESIGN §7, §8).

    load_suite ──► plan_runs ──► RunTask… ──► run_tasks (process pool) ──► RunOutcome… ──► SuiteResult
                   (checks: cassettes,        one worker = one provider:      score_run per run
                    repeats, providers)       it imports one SDK, once

A run is one ``RunTask``: an agent version, a case, a provider, a repeat and a mode —

- ``replay``: the cassette ``cassettes/<suite>/<agent>@<version>/<case>/<provider>/r<repeat>/`` is
  replayed offline (no server, no key); the request and approvals are the case's *current* ones, so
  a case edited since its recording shows up as cassette drift, never as a silently stale pass.
  Latency is the recorded one (``run.json``): replay wall time means nothing (DESIGN §6).
- ``emulator``: the run talks to portagent's emulator (one per worker and script, reset before
  every run so ``times: N`` faults fire the same way in every run).
- ``live``: the vendor's API, with the provider's key from the environment.

Every run gets its own ledger and approval namespace, ``eval:<suite>:<agent>@<version>:<case>:
<provider>:r<repeat>``, cleared before it starts: a rerun executes its writes again instead of
answering "duplicate", and seeded ids (``recording.replay.replay_ids``) stay in step with the
recording. Runs never share state, so they can go to any worker in any order.

Workers are processes (``forkserver``: the parent may hold threads — the progress bar, an emulator —
that must not be forked). Each worker is bound to one provider, so it imports one vendor SDK once;
when a provider's queue is empty its worker exits and the free slot goes to the provider with the
most work left per worker. Each worker reports its peak resident memory when it leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import os
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from portagent.contracts.errors import PortagentError, RecordingError, UsageError
from portagent.evals.scoring import Provenance, RunScore, score_run
from portagent.evals.suite import Case, LoadedSuite, Thresholds

Mode = Literal["replay", "emulator", "live"]
"""Where a run's model answers come from."""

MODES: tuple[Mode, ...] = ("replay", "emulator", "live")

DUMMY_KEYS = {"openai": "sk-portagent-dummy", "claude": "sk-ant-portagent-dummy", "adk": "portagent-dummy-key"}
"""Keys sent to the emulator (it checks that a key is sent, not which)."""


# -- what runs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentRef:
    """One agent version under test."""

    role: str
    """``agent``, ``baseline`` or ``candidate``."""
    path: Path
    """Absolute path of its spec."""
    name: str
    """The spec's ``name``."""
    version: str
    """The spec's ``version``."""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


def resolve_agents(loaded: LoadedSuite) -> list[AgentRef]:
    """The suite's agent versions, in role order (baseline before candidate)."""
    from portagent.contracts.bundle import load_agent

    refs = []
    for role, path in loaded.agents.items():
        bundle = load_agent(path)
        refs.append(AgentRef(role, path, bundle.root, bundle.spec.version))
    if len(refs) == 2 and refs[0].version == refs[1].version:
        raise UsageError(f"{loaded.path}: baseline and candidate both have version {refs[0].version!r}; "
                         "results are keyed by agent version, so give the candidate a new version")
    return refs


@dataclass(frozen=True)
class RunTask:
    """One run to make and score. Picklable: it crosses into a worker process."""

    index: int
    """Position in the plan (results are put back in this order)."""
    suite_id: str
    """The suite."""
    agent: AgentRef
    """Agent version."""
    case: Case
    """The case (its input, context, approvals and expectations)."""
    thresholds: Thresholds
    """The suite's default thresholds."""
    provider: str
    """openai / claude / adk."""
    repeat: int
    """Repeat index (0-based)."""
    mode: Mode
    """replay / emulator / live."""
    approver: str = "scripted"
    """The suite's approver."""
    cassette: Path | None = None
    """Cassette folder (replay)."""
    emulator_script: Path | None = None
    """Emulator script (emulator mode)."""
    out_dir: Path | None = None
    """Where this run's ``trace.jsonl`` and ``run.json`` go (None: memory only)."""

    @property
    def scope(self) -> str:
        return run_scope(self.suite_id, self.agent.label, self.case.case_id, self.provider, self.repeat)

    @property
    def label(self) -> str:
        return f"{self.agent.label} {self.case.case_id} {self.provider} r{self.repeat}"


@dataclass
class RunOutcome:
    """A scored run."""

    index: int
    """The task's index."""
    score: RunScore
    """Its score (a run that could not even start scores as a failed run with the error in its notes)."""
    error: str | None = None
    """Why the run could not be made or completed (drift, missing cassette, crash …)."""
    wall_s: float = 0.0
    """Wall time spent on it in the worker."""
    pid: int = 0
    """The worker that made it."""


@dataclass
class WorkerStats:
    """One worker process, reported when it leaves."""

    provider: str
    pid: int
    runs: int
    peak_rss_mb: float


def run_scope(suite_id: str, agent_label: str, case_id: str, provider: str, repeat: int) -> str:
    """Ledger and approval namespace of one eval run."""
    return f"eval:{suite_id}:{agent_label}:{case_id}:{provider}:r{repeat}"


def run_out_dir(results: Path, agent_label: str, case_id: str, provider: str, repeat: int) -> Path:
    """Where a run's trace and run.json go inside a results folder."""
    return results / "runs" / agent_label / case_id / provider / f"r{repeat}"


def request_for(case: Case, provider: str, repeat: int) -> Any:
    """The RunRequest a case asks for on ``provider``."""
    from portagent.contracts.run import RunRequest

    ctx = case.context
    context: dict[str, Any] = dict(ctx.values)
    if ctx.confidence is not None:
        context["confidence"] = ctx.confidence
    if ctx.evidence:
        context["evidence"] = list(ctx.evidence)
    return RunRequest(input=case.input, provider=provider, case_id=case.case_id, repeat=repeat,  # type: ignore[arg-type]
                      actor=ctx.actor, scopes=list(ctx.scopes), env=ctx.env, context=context)


def approver_for(case: Case, suite_approver: str) -> Any:
    """The approver of a case's runs: the case's scripted decisions, or the suite's named approver."""
    if suite_approver != "scripted":
        return suite_approver
    return {"type": "scripted", "decisions": [a.model_dump(mode="json", exclude_none=True) for a in case.approvals]}


def script_hash(path: Path) -> str:
    """Hash of an emulator script file, for the manifest."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def check_providers_installed(providers: Sequence[str]) -> None:
    """Refuse, before any worker starts, a provider whose SDK is not installed (without importing it)."""
    from portagent.adapters.base import REGISTRY
    from portagent.contracts.errors import MissingExtraError

    for p in providers:
        info = REGISTRY.get(p)
        if info is None:
            raise UsageError(f"unknown provider {p!r}; expected one of: {', '.join(REGISTRY)}")
        if importlib.util.find_spec(info.sdk_module.split(".")[0]) is None:
            raise MissingExtraError(p, info.package, info.extra)


def check_live_keys(providers: Sequence[str]) -> dict[str, str]:
    """``--live`` needs each provider's key variable (exit 2 naming the variable otherwise)."""
    from portagent.adapters.base import REGISTRY

    keys = {}
    missing = []
    for p in providers:
        env = REGISTRY[p].key_env
        value = os.environ.get(env)
        if not value:
            missing.append(f"{env} (for {p})")
        else:
            keys[p] = value
    if missing:
        raise UsageError(f"--live needs {', '.join(missing)} in the environment; or use --emulator / --replay")
    return keys


def select_providers(loaded: LoadedSuite, providers: Sequence[str] | None) -> list[str]:
    """The suite's providers, or the requested ones (each must be one of the suite's)."""
    if not providers:
        return list(loaded.suite.providers)
    unknown = [p for p in providers if p not in loaded.suite.providers]
    if unknown:
        raise UsageError(f"provider(s) {', '.join(unknown)} not in suite {loaded.suite.suite_id!r} "
                         f"(it runs on {', '.join(loaded.suite.providers)})")
    return list(dict.fromkeys(providers))


def select_cases(loaded: LoadedSuite, case_ids: Sequence[str] | None) -> list[Case]:
    if not case_ids:
        return list(loaded.cases)
    known = {c.case_id for c in loaded.cases}
    unknown = [c for c in case_ids if c not in known]
    if unknown:
        raise UsageError(f"case(s) {', '.join(unknown)} not in suite {loaded.suite.suite_id!r}; "
                         f"known: {', '.join(sorted(known))}")
    return [c for c in loaded.cases if c.case_id in set(case_ids)]


def plan_runs(loaded: LoadedSuite, *, mode: Mode, providers: Sequence[str] | None = None,
              repeats: int | None = None, cassettes: str | Path = "cassettes", results: Path | None = None,
              case_ids: Sequence[str] | None = None, agents: Sequence[AgentRef] | None = None,
              check: bool = True) -> list[RunTask]:
    """Every run of the suite, checked before anything starts (``check=False``: recording plans).

    Replay: every cassette must exist; a missing one raises ``RecordingError`` with the exact
    ``portagent record`` command(s), and ``repeats`` beyond what was recorded raises ``UsageError``.
    """
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if repeats is not None and repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {repeats}")
    suite = loaded.suite
    chosen = select_providers(loaded, providers)
    cases = select_cases(loaded, case_ids)
    refs = list(agents) if agents is not None else resolve_agents(loaded)
    n = repeats if repeats is not None else suite.repeats
    given, cassettes = cassettes, Path(cassettes).resolve()  # workers may not share this process's folder
    if mode == "emulator" and check:
        lacking = [c.case_id for c in cases if c.case_id not in loaded.emulator_scripts]
        if lacking:
            raise UsageError(f"{loaded.path}: --emulator needs an emulator_script (suite or case); "
                             f"none for: {', '.join(lacking)}")
    tasks: list[RunTask] = []
    for ref in refs:
        for case in cases:
            for provider in chosen:
                for r in range(n):
                    tasks.append(RunTask(
                        index=len(tasks), suite_id=suite.suite_id, agent=ref, case=case,
                        thresholds=suite.thresholds, provider=provider, repeat=r, mode=mode,
                        approver=suite.approver,
                        cassette=_cassette(cassettes, suite.suite_id, ref, case.case_id, provider, r),
                        emulator_script=loaded.emulator_scripts.get(case.case_id),
                        out_dir=run_out_dir(results, ref.label, case.case_id, provider, r) if results else None,
                    ))
    if mode == "replay" and check:
        check_cassettes(loaded, tasks, given, repeats_given=repeats is not None)
    return tasks


def _cassette(root: str | Path, suite_id: str, ref: AgentRef, case_id: str, provider: str, repeat: int) -> Path:
    from portagent.recording.layout import run_folder

    return run_folder(root, suite_id, ref.name, ref.version, case_id, provider, repeat)


def recorded_repeats(folder_r0: Path, provider: str) -> int:
    """How many consecutive repeats (r0, r1, …) are recorded next to ``folder_r0``."""
    from portagent.recording.layout import is_recorded

    n = 0
    while is_recorded(folder_r0.parent / f"r{n}", provider):
        n += 1
    return n


def check_cassettes(loaded: LoadedSuite, tasks: Sequence[RunTask], root: str | Path, *, repeats_given: bool) -> None:
    """Replay needs every cassette: name what is missing and how to record it."""
    from portagent.recording.layout import is_recorded, record_command

    missing = [t for t in tasks if t.cassette is None or not is_recorded(t.cassette, t.provider)]
    if not missing:
        return
    script = loaded.suite.emulator_script
    emulator = str(loaded.path.parent / script) if script else None
    # --repeats beyond the recording: say how many repeats there are, not "missing cassette"
    short = []
    for t in missing:
        assert t.cassette is not None
        have = recorded_repeats(t.cassette.parent / "r0", t.provider)
        if have and t.repeat >= have:
            short.append((t, have))
    if short and len(short) == len(missing):
        t, have = min(short, key=lambda x: x[1])
        wanted = max(x.repeat for x in tasks) + 1
        flag = "--repeats" if repeats_given else "the suite's repeats"
        raise UsageError(
            f"{flag} asks for {wanted} repeats but only {have} are recorded for case {t.case.case_id} on "
            f"{t.provider} ({t.agent.label}) under {t.cassette.parent if t.cassette else root}; "
            f"use --repeats {have} or record more with '"
            + record_command(str(loaded.path), t.provider, out=root, emulator=emulator).replace(
                " --missing", f" --repeats {wanted} --missing") + "'")
    lines = []
    by_provider = Counter(t.provider for t in missing)
    total = Counter(t.provider for t in tasks)
    for provider, count in sorted(by_provider.items()):
        if count == total[provider]:
            lines.append(record_command(str(loaded.path), provider, out=root, emulator=emulator))
        else:
            for cid in sorted({t.case.case_id for t in missing if t.provider == provider}):
                lines.append(record_command(str(loaded.path), provider, case_id=cid, out=root, emulator=emulator))
    shown = "\n".join(f"  {t.cassette}" for t in missing[:5])
    more = f"\n  … and {len(missing) - 5} more" if len(missing) > 5 else ""
    raise RecordingError(
        f"{len(missing)} cassette{'s' if len(missing) != 1 else ''} missing for --replay:\n{shown}{more}\n"
        f"record {'them' if len(missing) != 1 else 'it'} with:\n" + "\n".join(f"  {c}" for c in lines[:10]))


# -- making one run (in any process) -----------------------------------------------------------------

_BUNDLES: dict[Path, Any] = {}
_EMULATORS: dict[Path, Any] = {}
_STACK = contextlib.ExitStack()


def _bundle(path: Path) -> Any:
    if path not in _BUNDLES:
        from portagent.contracts.bundle import load_agent

        _BUNDLES[path] = load_agent(path)
    return _BUNDLES[path]


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


def clear_run_state(scope: str) -> None:
    """Forget the effects and approval cards of a previous run with the same scope."""
    from portagent.tools.approvals import ApprovalStore
    from portagent.tools.ledger import EffectLedger

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


def execute(task: RunTask) -> RunOutcome:
    """Make one run and score it. Never raises for a run's own failure: it becomes a failed score."""
    t0 = time.perf_counter()
    try:
        output, latency, source, notes = asyncio.run(_make_run(task))
    except PortagentError as e:
        return _unrunnable(task, e.render(), t0)
    except Exception as e:  # an SDK or portagent bug: keep it visible, keep the eval going
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return _unrunnable(task, f"run crashed: {detail}", t0)
    prov = Provenance(case_id=task.case.case_id, provider=task.provider, agent=task.agent.name,
                      agent_version=task.agent.version, source=source, repeat=task.repeat,
                      run_id=output.result.run_id)
    score = score_run(output.events, task.case, task.thresholds, latency_ms=latency, provenance=prov)
    if notes:
        score = score.model_copy(update={"warnings": [*score.warnings, *notes]})
    error = None
    r = output.result
    if r.status == "failed":
        error = f"{r.stop_reason}: {r.error}" if r.error else r.stop_reason
        score = score.model_copy(update={"notes": [f"run failed ({error})", *score.notes]})
    return RunOutcome(task.index, score, error, time.perf_counter() - t0, os.getpid())


def _unrunnable(task: RunTask, message: str, t0: float) -> RunOutcome:
    prov = Provenance(case_id=task.case.case_id, provider=task.provider, agent=task.agent.name,
                      agent_version=task.agent.version, source=None, repeat=task.repeat)
    score = score_run([], task.case, task.thresholds, provenance=prov)
    score = score.model_copy(update={"notes": [f"run could not be made: {message}", *score.notes]})
    return RunOutcome(task.index, score, message, time.perf_counter() - t0, os.getpid())


async def _make_run(task: RunTask) -> tuple[Any, float | None, Any, list[str]]:
    """(RunOutput, recorded latency or None, source, warnings such as an SDK version change)."""
    from portagent.runtime.runner import RunConfig, arun_full
    from portagent.runtime.session import Endpoint

    bundle = _bundle(task.agent.path)
    request = request_for(task.case, task.provider, task.repeat)
    approver = approver_for(task.case, task.approver)
    clear_run_state(task.scope)
    if task.mode == "replay":
        from portagent.recording.replay import load_recorded, replay_config, version_changes

        assert task.cassette is not None
        recorded = load_recorded(task.cassette)
        config, _ = replay_config(task.cassette, recorded, out_dir=task.out_dir, approver=approver)
        config.scope = task.scope
        output = await arun_full(bundle, request, config)
        changed = [f"recorded with another version: {c}" for c in version_changes(recorded.record)]
        return output, recorded.record.result.duration_ms, recorded.record.manifest.source, changed
    if task.mode == "emulator":
        assert task.emulator_script is not None
        emu = _emulator(task.emulator_script)
        emu.reset()  # fault counters (times: N) start over for every run
        endpoint = Endpoint(source="emulator", mode="direct", base_url=emu.base_url,
                            api_key=DUMMY_KEYS[task.provider], script_hash=script_hash(task.emulator_script))
    else:
        from portagent.adapters.base import REGISTRY

        endpoint = Endpoint(source="live", mode="direct", api_key=os.environ.get(REGISTRY[task.provider].key_env))
    output = await arun_full(bundle, request, RunConfig(endpoint=endpoint, approver=approver, out_dir=task.out_dir,
                                                        scope=task.scope))
    return output, None, endpoint.source, []


# -- the pool ----------------------------------------------------------------------------------------


def _worker_main(provider: str, tasks: Any, results: Any, env: dict[str, str], cwd: str) -> None:
    """A worker bound to one provider: runs its tasks until the queue's sentinel, then reports memory.

    The fork server was started with the environment and folder of its first use; a worker takes the
    parent's *current* ones (``PORTAGENT_HOME``, API keys, relative paths)."""
    import resource

    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    done = 0
    try:
        while True:
            task = tasks.get()
            if task is None:
                break
            results.put(("start", os.getpid(), task.index))
            results.put(("run", os.getpid(), execute(task)))
            done += 1
    finally:
        close_emulators()
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        results.put(("done", os.getpid(), WorkerStats(provider, os.getpid(), done, round(peak_kb / 1024, 1))))


class _Speed:
    """Running estimates, per provider, of a worker's start-up time (process + SDK import, seen as the
    delay to its first result) and of one run's time."""

    DEFAULT_STARTUP_S = 5.0

    def __init__(self) -> None:
        self._start: dict[int, tuple[str, float]] = {}
        self._first_seen: set[int] = set()
        self._startup: dict[str, list[float]] = {}
        self._runs: dict[str, list[float]] = {}

    def started(self, pid: int, provider: str) -> None:
        self._start[pid] = (provider, time.perf_counter())

    def finished(self, pid: int, wall_s: float) -> None:
        provider, t0 = self._start[pid]
        if pid not in self._first_seen:  # the first run pays for the imports
            self._first_seen.add(pid)
            self._startup.setdefault(provider, []).append(time.perf_counter() - t0 - min(wall_s, self.run_s(provider)))
        else:
            self._runs.setdefault(provider, []).append(wall_s)

    def startup_s(self, provider: str) -> float:
        xs = self._startup.get(provider)
        return sum(xs) / len(xs) if xs else self.DEFAULT_STARTUP_S

    def run_s(self, provider: str) -> float:
        xs = self._runs.get(provider)
        return sum(xs) / len(xs) if xs else 0.2

    def worth_another(self, provider: str, queued: int, active: int) -> bool:
        if active == 0:
            return True
        remaining_s = queued * self.run_s(provider) / active
        return remaining_s > 1.5 * self.startup_s(provider)


@dataclass
class PoolReport:
    """What the pool did."""

    outcomes: list[RunOutcome] = field(default_factory=list)
    workers: list[WorkerStats] = field(default_factory=list)
    wall_s: float = 0.0


def run_tasks(tasks: Sequence[RunTask], *, workers: int = 2, in_process: bool = False,
              on_result: Callable[[RunOutcome], None] | None = None) -> PoolReport:
    """Run every task; outcomes come back in plan order.

    ``in_process``: no worker processes (the pytest plugin, small runs inside tests).
    """
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    t0 = time.perf_counter()
    report = PoolReport()
    if in_process:
        for task in tasks:
            out = execute(task)
            report.outcomes.append(out)
            if on_result:
                on_result(out)
        close_emulators()
    else:
        for out in _pool(tasks, workers, report.workers):
            report.outcomes.append(out)
            if on_result:
                on_result(out)
    report.outcomes.sort(key=lambda o: o.index)
    report.wall_s = time.perf_counter() - t0
    return report


def _pool(tasks: Sequence[RunTask], workers: int, stats: list[WorkerStats]) -> Iterator[RunOutcome]:
    import multiprocessing as mp
    import queue as queue_mod

    if not tasks:
        return
    ctx = mp.get_context("forkserver")
    results = ctx.Queue()
    queues: dict[str, Any] = {}
    for t in tasks:
        queues.setdefault(t.provider, ctx.Queue()).put(t)
    for q in queues.values():
        for _ in range(workers):  # at most `workers` workers of one provider ever read a sentinel
            q.put(None)
    left = Counter(t.provider for t in tasks)          # not finished yet
    active: Counter[str] = Counter()                   # live workers per provider
    procs: dict[int, tuple[str, Any]] = {}
    in_flight: dict[int, int] = {}                     # pid → task index
    by_index = {t.index: t for t in tasks}
    speed = _Speed()

    def queued(p: str) -> int:
        return left[p] - active[p]

    def start_one(initial: bool = False) -> bool:
        """Start a worker for the provider that needs one most; a provider that already has workers
        gets another only when its remaining work outweighs the new worker's start-up (SDK import)."""
        candidates = [p for p in queues if queued(p) > 0 and (initial or speed.worth_another(p, queued(p), active[p]))]
        if not candidates:
            return False
        p = max(candidates, key=lambda x: (active[x] == 0, queued(x) * speed.run_s(x) / (active[x] + 1), x))
        proc = ctx.Process(target=_worker_main, args=(p, queues[p], results, dict(os.environ), os.getcwd()),
                           name=f"portagent-eval-{p}", daemon=True)
        proc.start()
        assert proc.pid is not None
        procs[proc.pid] = (p, proc)
        speed.started(proc.pid, p)
        active[p] += 1
        return True

    for _ in range(min(workers, len(tasks))):
        if not start_one(initial=True):
            break
    try:
        while procs:
            try:
                kind, pid, payload = results.get(timeout=0.5)
            except queue_mod.Empty:
                for pid, (p, proc) in list(procs.items()):
                    if not proc.is_alive() and proc.exitcode not in (0, None):
                        # died without a word (killed, segfault): its run fails, a fresh worker goes on
                        del procs[pid]
                        active[p] -= 1
                        index = in_flight.pop(pid, None)
                        if index is not None:
                            left[p] -= 1
                            yield _unrunnable(by_index[index], f"worker {pid} died (exit code {proc.exitcode})",
                                              time.perf_counter())
                        start_one()
                continue
            if kind == "start":
                in_flight[pid] = payload
            elif kind == "run":
                in_flight.pop(pid, None)
                left[by_index[payload.index].provider] -= 1
                speed.finished(pid, payload.wall_s)
                yield payload
            elif kind == "done":
                stats.append(payload)
                p, proc = procs.pop(pid)
                proc.join(timeout=10)
                active[p] -= 1
                while len(procs) < workers and start_one():
                    pass
    finally:
        for _, proc in procs.values():
            proc.terminate()
        for q in (*queues.values(), results):
            q.cancel_join_thread()
            q.close()


# -- the whole eval ----------------------------------------------------------------------------------


@dataclass
class EvalPlan:
    """Every run of an eval, checked (``plan_eval``); nothing has run yet."""

    loaded: LoadedSuite
    agents: list[AgentRef]
    mode: Mode
    providers: list[str]
    repeats: int
    tasks: list[RunTask]


@dataclass
class EvalRun:
    """A finished eval: its plan, the ``SuiteResult`` and what the pool did."""

    plan: EvalPlan
    result: Any
    """The ``SuiteResult``."""
    pool: PoolReport
    workers: int
    errors: list[str] = field(default_factory=list)
    """One line per run that could not be made or failed outright (drift, crash …)."""


def plan_eval(loaded: LoadedSuite, *, mode: Mode, providers: Sequence[str] | None = None, repeats: int | None = None,
              cassettes: str | Path = "cassettes", results: Path | None = None,
              case_ids: Sequence[str] | None = None, emulator_script: Path | None = None) -> EvalPlan:
    """Check everything that can refuse an eval — providers installed, ``--live`` keys, agents, every
    cassette and repeat for replay — and plan its runs. ``results``: where run traces will go."""
    chosen = select_providers(loaded, providers)
    check_providers_installed(chosen)
    if mode == "live":
        check_live_keys(chosen)
    agents = resolve_agents(loaded)
    tasks = plan_runs(loaded, mode=mode, providers=chosen, repeats=repeats, cassettes=cassettes,
                      results=results.resolve() if results else None, case_ids=case_ids, agents=agents,
                      check=not (mode == "emulator" and emulator_script is not None))
    if emulator_script is not None:
        from dataclasses import replace

        tasks = [replace(t, emulator_script=Path(emulator_script).resolve()) for t in tasks]
    return EvalPlan(loaded, agents, mode, chosen, repeats if repeats is not None else loaded.suite.repeats, tasks)


def run_eval(plan: EvalPlan, *, workers: int = 2, in_process: bool = False,
             on_result: Callable[[RunOutcome], None] | None = None) -> EvalRun:
    """Run a plan and aggregate it."""
    from portagent.evals.aggregate import SuiteResult

    pool = run_tasks(plan.tasks, workers=workers, in_process=in_process, on_result=on_result)
    suite = plan.loaded.suite
    result = SuiteResult.from_runs(suite.suite_id, suite.dataset_version, [o.score for o in pool.outcomes],
                                   plan.loaded.cases)
    errors = [f"{plan.tasks[o.index].label}: {o.error}" for o in pool.outcomes if o.error]
    return EvalRun(plan, result, pool, workers, errors)


# -- recording ----------------------------------------------------------------------------------------

RecordOnly = Literal["all", "missing", "drifted"]


@dataclass
class RecordOutcome:
    """One cassette folder after ``record_tasks``."""

    task: RunTask
    action: Literal["recorded", "skipped", "failed"]
    """What happened to the folder."""
    detail: str = ""
    """Run status, why it was skipped, or the error."""


def is_drift(outcome: RunOutcome) -> bool:
    """The replay failed because the SDK sent what the cassette does not hold."""
    return "cassette_drift" in (outcome.error or "")


def record_tasks(tasks: Sequence[RunTask], *, source: Literal["emulator", "live"], only: RecordOnly = "all",
                 record_mode: str = "all", emulator_script: Path | None = None, verify: bool = True,
                 workers: int = 2, on_result: Callable[[RecordOutcome], None] | None = None) -> list[RecordOutcome]:
    """Record each task's run into its cassette folder.

    Recording happens in this process, one run at a time, so the emulator's fault counters and the
    recorded timing belong to that run alone. ``only="missing"`` skips folders already recorded;
    ``only="drifted"`` replays every recorded folder first and re-records those that drift.
    ``verify`` replays each new recording and reports one that does not replay cleanly as failed (it
    would fail in CI anyway).

    Replays (drift checks, verification) go to worker processes: a run's tools may keep state in
    their module (the demo's ticket numbers), and a replay must start from the same state as its
    recording did — a fresh process, never the one that just recorded the same scope.
    """
    from dataclasses import replace

    from portagent.recording.layout import is_recorded

    outcomes: dict[int, RecordOutcome] = {}
    todo: list[RunTask] = []
    for task in tasks:
        assert task.cassette is not None
        recorded = is_recorded(task.cassette, task.provider)
        if only == "missing" and recorded:
            outcomes[task.index] = RecordOutcome(task, "skipped", "already recorded")
        elif only == "drifted" and not recorded:
            outcomes[task.index] = RecordOutcome(task, "skipped", "not recorded (use --missing)")
        else:
            todo.append(task)
    if only == "drifted" and todo:
        checks = run_tasks([replace(t, mode="replay", out_dir=None) for t in todo], workers=workers)
        drifted = {o.index for o in checks.outcomes if is_drift(o)}
        for o in checks.outcomes:
            if o.index not in drifted:
                t = next(t for t in todo if t.index == o.index)
                outcomes[o.index] = RecordOutcome(t, "skipped", "replays cleanly" if not o.error else
                                                  f"replay fails without drift: {o.error}")
        todo = [t for t in todo if t.index in drifted]
    for task in todo:
        out = _record_one(task, source, record_mode, emulator_script)
        outcomes[task.index] = out
        if on_result and not (verify and out.action == "recorded"):
            on_result(out)
    close_emulators()
    fresh = [t for t in todo if outcomes[t.index].action == "recorded"]
    if verify and fresh:
        checks = run_tasks([replace(t, mode="replay", out_dir=None) for t in fresh], workers=workers)
        for o in checks.outcomes:
            prev = outcomes[o.index]
            same = o.score.status == prev.detail.split(" ")[0] and not is_drift(o) and o.score.provenance.run_id
            if o.error and not same:
                outcomes[o.index] = RecordOutcome(prev.task, "failed", f"recorded, but its replay fails: {o.error}")
            else:
                outcomes[o.index] = RecordOutcome(prev.task, "recorded", prev.detail + ", replays cleanly")
            if on_result:
                on_result(outcomes[o.index])
    if on_result:
        for t in tasks:
            if outcomes[t.index].action == "skipped":
                on_result(outcomes[t.index])
    return [outcomes[t.index] for t in tasks]


def _record_one(task: RunTask, source: str, record_mode: str, script_override: Path | None) -> RecordOutcome:
    try:
        output = asyncio.run(_record(task, source, record_mode, script_override))
    except PortagentError as e:
        return RecordOutcome(task, "failed", e.render())
    except Exception as e:
        return RecordOutcome(task, "failed", "".join(traceback.format_exception_only(type(e), e)).strip())
    r = output.result
    detail = r.status + (f" ({r.stop_reason})" if r.stop_reason != "final_output" else "")
    if r.status == "failed" and r.error:
        detail += f": {r.error.splitlines()[0][:200]}"
    return RecordOutcome(task, "recorded", detail)


async def _record(task: RunTask, source: str, record_mode: str, script_override: Path | None) -> Any:
    from portagent.recording.record import record_run
    from portagent.recording.replay import replay_ids
    from portagent.runtime.session import Endpoint

    assert task.cassette is not None
    bundle = _bundle(task.agent.path)
    clear_run_state(task.scope)
    if source == "emulator":
        script = script_override or task.emulator_script
        if script is None:
            raise UsageError(f"case {task.case.case_id} has no emulator_script; give --emulator SCRIPT")
        emu = _emulator(script)
        emu.reset()
        endpoint = Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY_KEYS[task.provider],
                            script_hash=script_hash(script))
    else:
        from portagent.adapters.base import REGISTRY

        endpoint = Endpoint(source="live", api_key=os.environ.get(REGISTRY[task.provider].key_env))
    ids = replay_ids(bundle.root, bundle.spec.version, task.case.case_id, task.provider, task.repeat)
    return await record_run(bundle, request_for(task.case, task.provider, task.repeat), task.cassette, endpoint,
                            approver=approver_for(task.case, task.approver), record_mode=record_mode,
                            scope=task.scope, ids=ids)
