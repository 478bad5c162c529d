"""Planning an eval: which runs (agent version × case × provider × repeat × mode), and the checks
that refuse a plan before anything runs (providers installed, keys, cassettes, recorded repeats).
See ``portagent.runtime.eval_run`` for the whole flow."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from portagent.contracts.errors import RecordingError, UnsupportedFeatureError, UsageError
from portagent.contracts.loaded_suite import LoadedSuite
from portagent.contracts.suite import Case, GraderSpec, Thresholds
from portagent.evals.scoring import RunScore

Mode = Literal["replay", "emulator", "live"]
"""Where a run's model answers come from."""

MODES: tuple[Mode, ...] = ("replay", "emulator", "live")

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
        raise UsageError(
            f"{loaded.path}: baseline and candidate both have version {refs[0].version!r}; "
            "results are keyed by agent version, so give the candidate a new version"
        )
    return refs


@dataclass(frozen=True)
class ResolvedGrader:
    """A case's grader with its judge resolved (``portagent.runtime.judging`` makes its runs)."""

    spec: GraderSpec
    """The grader as written."""
    judge: AgentRef
    """The judge agent (role ``judge``)."""
    emulator_script: Path | None = None
    """Script of the judge's emulator runs (the grader's, else the suite's)."""


def resolve_graders(loaded: LoadedSuite) -> dict[str, tuple[ResolvedGrader, ...]]:
    """case_id → its graders, judges resolved (paths relative to the suite file)."""
    from portagent.contracts.bundle import load_agent

    base = Path(loaded.path).resolve().parent
    refs: dict[Path, AgentRef] = {}

    def resolve(g: GraderSpec) -> ResolvedGrader:
        path = (base / g.judge).resolve()
        if path not in refs:
            bundle = load_agent(path)
            refs[path] = AgentRef("judge", path, bundle.root, bundle.spec.version)
        script = g.emulator_script or loaded.suite.emulator_script
        return ResolvedGrader(g, refs[path], (base / script).resolve() if script else None)

    out: dict[str, tuple[ResolvedGrader, ...]] = {}
    for case in loaded.cases:
        specs = loaded.suite.graders_of(case)
        if specs:
            out[case.case_id] = tuple(resolve(g) for g in specs)
    return out


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
    graders: tuple[ResolvedGrader, ...] = ()
    """The case's graders (their judge runs follow this run's)."""

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
    output: Any = None
    """The run's final output (what graders judge); None when it gave none."""
    signals: RunSignals | None = None
    """What the run tells the scheduler of a ``--live`` eval (``runtime.limits``)."""


@dataclass(frozen=True)
class RunSignals:
    """What a finished run tells the scheduler: how much it used, and what its provider said."""

    requests: int = 0
    """HTTP requests to the model (model calls, plus error answers a vendor client retried)."""
    tokens: int = 0
    """Input + output tokens."""
    rate_limited: bool = False
    """The provider answered 429, 503 or 529 at least once (even if the client's retry then worked)."""
    retry_after_s: float | None = None
    """The largest ``Retry-After`` the provider sent, in seconds."""
    retryable: bool = False
    """The run failed with a retryable provider error."""
    retry_safe: bool = True
    """It called only ``read``/``compute`` tools, so running it again repeats no effect."""


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


def request_for(case: Case, provider: str, repeat: int, bundle: Any = None) -> Any:
    """The RunRequest a case asks for on ``provider`` (continuing ``case.thread`` under ``bundle``'s context
    budget when the case gives one)."""
    request = _base_request(case, provider, repeat)
    if case.thread and bundle is not None:  # issue 16: a case continuing a session thread
        from portagent.runtime.sessions import thread_request

        request = thread_request(bundle, request, case.thread)
    return request


def options_extra(case: Case, provider: str, repeat: int, bundle: Any) -> dict[str, Any]:
    """The ``RunOptions.extra`` of a case's run: for a case continuing a thread, what its context budget
    left out (the run's context manifest lists it, as for a run in a session)."""
    if not case.thread:
        return {}
    from portagent.runtime.sessions import thread_options

    return thread_options(bundle, _base_request(case, provider, repeat), case.thread)


def _base_request(case: Case, provider: str, repeat: int) -> Any:
    from portagent.contracts.run import RunRequest

    ctx = case.context
    context: dict[str, Any] = dict(ctx.values)
    if ctx.confidence is not None:
        context["confidence"] = ctx.confidence
    if ctx.evidence:
        context["evidence"] = list(ctx.evidence)
    return RunRequest(
        input=case.input,
        provider=provider,
        case_id=case.case_id,
        repeat=repeat,
        actor=ctx.actor,
        scopes=list(ctx.scopes),
        env=ctx.env,
        context=context,
    )


def approver_for(case: Case, suite_approver: str) -> Any:
    """The approver of a case's runs: the case's scripted decisions, or the suite's named approver."""
    if suite_approver != "scripted":
        return suite_approver
    return {
        "type": "scripted",
        "decisions": [a.model_dump(mode="json", exclude_none=True) for a in case.approvals],
    }


def script_hash(path: Path) -> str:
    """Hash of an emulator script file, for the manifest."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def check_portable(agents: Sequence[AgentRef], providers: Sequence[str]) -> None:
    """Refuse, before any worker starts, an agent version a chosen provider cannot run: the one
    portability verdict (the same ``validate --provider``, ``run`` and ``port-check`` give)."""
    from portagent.adapters.portability import verdict
    from portagent.contracts.bundle import load_agent

    for ref in agents:
        bundle = load_agent(ref.path)
        for provider in providers:
            found = verdict(bundle, provider)
            if not found.runnable:
                raise UnsupportedFeatureError(
                    provider,
                    ", ".join(lack.label for lack in found.lacks),
                    f"agent {ref.label} ({ref.role}, {ref.path.name}): "
                    + "; ".join(f"{lack.detail} [{lack.path or 'spec'}]" for lack in found.lacks)
                    + "; run `portagent port-check` for the whole list, or leave this provider out of the suite",
                )


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


def check_live_keys(providers: Sequence[str], agents: Sequence[Path] = ()) -> None:
    """``--live`` needs each provider's key variable — for ``langgraph``, the one of each chat-model vendor
    the ``agents`` run on (``adapters.base.key_envs``) — (exit 2 naming every variable missing)."""
    from portagent.contracts.bundle import load_agent
    from portagent.runtime.keys import key_envs

    bundles: list[Any] = [load_agent(a) for a in agents] if "langgraph" in providers else []
    missing: list[str] = []
    for p in providers:
        envs = [e for b in bundles or [None] for e in key_envs(p, b)]
        missing += [f"{e} (for {p})" for e in dict.fromkeys(envs) if not os.environ.get(e)]
    if missing:
        raise UsageError(
            f"--live needs {', '.join(missing)} in the environment; or use --emulator / --replay"
        )


def select_providers(loaded: LoadedSuite, providers: Sequence[str] | None) -> list[str]:
    """The suite's providers, or the requested ones (each must be one of the suite's)."""
    if not providers:
        return list(loaded.suite.providers)
    unknown = [p for p in providers if p not in loaded.suite.providers]
    if unknown:
        raise UsageError(
            f"provider(s) {', '.join(unknown)} not in suite {loaded.suite.suite_id!r} "
            f"(it runs on {', '.join(loaded.suite.providers)})"
        )
    return list(dict.fromkeys(providers))


def select_cases(loaded: LoadedSuite, case_ids: Sequence[str] | None) -> list[Case]:
    if not case_ids:
        return list(loaded.cases)
    known = {c.case_id for c in loaded.cases}
    unknown = [c for c in case_ids if c not in known]
    if unknown:
        raise UsageError(
            f"case(s) {', '.join(unknown)} not in suite {loaded.suite.suite_id!r}; "
            f"known: {', '.join(sorted(known))}"
        )
    return [c for c in loaded.cases if c.case_id in set(case_ids)]


def plan_runs(
    loaded: LoadedSuite,
    *,
    mode: Mode,
    providers: Sequence[str] | None = None,
    repeats: int | None = None,
    cassettes: str | Path = "cassettes",
    results: Path | None = None,
    case_ids: Sequence[str] | None = None,
    agents: Sequence[AgentRef] | None = None,
    check: bool = True,
) -> list[RunTask]:
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
            raise UsageError(
                f"{loaded.path}: --emulator needs an emulator_script (suite or case); "
                f"none for: {', '.join(lacking)}"
            )
    check_portable(refs, chosen)
    graders = resolve_graders(loaded) if any(c.expect.graders for c in cases) else {}
    tasks: list[RunTask] = []
    for ref in refs:
        for case in cases:
            for provider in chosen:
                for r in range(n):
                    tasks.append(
                        RunTask(
                            index=len(tasks),
                            suite_id=suite.suite_id,
                            agent=ref,
                            case=case,
                            thresholds=suite.thresholds,
                            provider=provider,
                            repeat=r,
                            mode=mode,
                            approver=suite.approver,
                            cassette=_cassette(cassettes, suite.suite_id, ref, case.case_id, provider, r),
                            emulator_script=loaded.emulator_scripts.get(case.case_id),
                            out_dir=run_out_dir(results, ref.label, case.case_id, provider, r)
                            if results
                            else None,
                            graders=graders.get(case.case_id, ()),
                        )
                    )
    if mode == "replay" and check:
        check_cassettes(loaded, tasks, given, repeats_given=repeats is not None)
    return tasks


def _cassette(
    root: str | Path, suite_id: str, ref: AgentRef, case_id: str, provider: str, repeat: int
) -> Path:
    from portagent.recording.layout import run_folder

    return run_folder(root, suite_id, ref.name, ref.version, case_id, provider, repeat)


def recorded_repeats(folder_r0: Path, provider: str) -> int:
    """How many consecutive repeats (r0, r1, …) are recorded next to ``folder_r0``."""
    from portagent.recording.layout import is_recorded

    n = 0
    while is_recorded(folder_r0.parent / f"r{n}", provider):
        n += 1
    return n


def check_cassettes(
    loaded: LoadedSuite, tasks: Sequence[RunTask], root: str | Path, *, repeats_given: bool
) -> None:
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
                " --missing", f" --repeats {wanted} --missing"
            )
            + "'"
        )
    lines = []
    by_provider = Counter(t.provider for t in missing)
    total = Counter(t.provider for t in tasks)
    for provider, count in sorted(by_provider.items()):
        if count == total[provider]:
            lines.append(record_command(str(loaded.path), provider, out=root, emulator=emulator))
        else:
            for cid in sorted({t.case.case_id for t in missing if t.provider == provider}):
                lines.append(
                    record_command(str(loaded.path), provider, case_id=cid, out=root, emulator=emulator)
                )
    shown = "\n".join(f"  {t.cassette}" for t in missing[:5])
    more = f"\n  … and {len(missing) - 5} more" if len(missing) > 5 else ""
    raise RecordingError(
        f"{len(missing)} cassette{'s' if len(missing) != 1 else ''} missing for --replay:\n{shown}{more}\n"
        f"record {'them' if len(missing) != 1 else 'it'} with:\n" + "\n".join(f"  {c}" for c in lines[:10])
    )
