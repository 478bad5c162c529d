"""pytest plugin (entry point ``pytest11: portagent``): eval suites as test items.

    pytest --portagent-suite examples/support_desk/suite.yaml              # replay every case × provider
    pytest --portagent-suite SUITE --portagent-providers openai            # one provider
    pytest --portagent-suite SUITE --portagent-record                      # record instead (emulator)

Each case × provider × repeat becomes one item, ``suite.yaml::<case_id>[<provider>-r<n>]`` (with
``-<agent>@<version>`` added inside the brackets when the suite plans several agent versions), located
at the case's line in its file (so a failure points at the case, in the terminal, in JUnit
``properties`` and in CI annotations). It replays its cassette offline and fails with the gate's notes
when the run fails; a missing cassette fails with the ``portagent record`` command that creates it.
With ``--portagent-record`` the item records its cassette against the emulator and then scores what
it recorded (the recorded trace), so a case that fails still fails. Without test paths on the command
line only the suites are collected; with paths, both.

Or as a marker on a test that takes ``portagent_run``::

    @pytest.mark.portagent_suite("examples/support_desk/suite.yaml", providers=["openai"])
    def test_support_desk(portagent_run):
        portagent_run.check()            # replays, raises AssertionError with the notes

This module is loaded in every pytest run of a project that installs portagent: it imports nothing
heavy at import time (no SDK, no vcrpy, not even the eval core) — only when a suite is collected.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # types only: the eval core loads when a suite is collected, never at import
    from portagent.runtime.eval_plan import RunOutcome, RunTask

_SUITES_KEY = pytest.StashKey[set[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("portagent", "portagent eval suites")
    group.addoption(
        "--portagent-suite",
        action="append",
        default=[],
        metavar="SUITE",
        help="turn each case x provider of SUITE into a test item replaying its cassettes (repeatable)",
    )
    group.addoption(
        "--portagent-record",
        action="store_true",
        help="record the suites' cassettes (against their emulator scripts) instead of replaying them",
    )
    group.addoption(
        "--portagent-cassettes",
        default="cassettes",
        metavar="DIR",
        help="cassette root (default: ./cassettes)",
    )
    group.addoption(
        "--portagent-providers",
        default=None,
        metavar="P[,P...]",
        help="only these providers (default: the suite's)",
    )
    group.addoption(
        "--portagent-agent",
        default="all",
        choices=_ROLES,
        help="only the agent version with this role (default: all)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "portagent_suite(path, providers=None, cassettes='cassettes', role='all'): parametrize the "
        "test's 'portagent_run' argument with every case x provider x agent version of the suite "
        "(relative paths: from pytest's rootdir, else from the test file's folder)",
    )
    config.addinivalue_line(
        "markers", "portagent: an eval case x provider item collected from a portagent suite"
    )
    suites = {Path(s).resolve() for s in config.getoption("portagent_suite") or []}
    config.stash[_SUITES_KEY] = suites
    if not suites:
        return
    missing = [str(s) for s in suites if not s.is_file()]
    if missing:
        raise pytest.UsageError(f"--portagent-suite: suite file not found: {', '.join(missing)}")
    # Collect the suite files themselves: alone when no test path was given, else beside the paths.
    explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    paths = [str(s) for s in sorted(suites)]
    config.args[:] = [*config.args, *paths] if explicit else paths


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    suites = parent.config.stash.get(_SUITES_KEY, set())
    if file_path.resolve() in suites:
        return SuiteFile.from_parent(parent, path=file_path)
    return None


# -- one case × provider × version ---------------------------------------------------------------------


@dataclass
class CaseRuns:
    """One run of a case — a case × provider × repeat × agent version — replayed (or recorded)."""

    tasks: list[RunTask]
    """The RunTask (portagent.runtime.eval_plan): one, the repeat this item stands for."""
    record: bool = False
    """Record instead of replaying."""
    loaded: Any = None
    """The LoadedSuite (for the record command of a missing cassette)."""
    cassettes: str = "cassettes"
    outcomes: list[RunOutcome] = field(default_factory=list)
    several_agents: bool = False
    """The suite plans several agent versions: the id names the version too."""
    location: tuple[Path, int] | None = None
    """The case's file and 1-based line."""

    @property
    def id(self) -> str:
        """``case_id[provider-r0]`` (``case_id[provider-r0-agent@1.0.0]`` with several agent versions)."""
        t = self.tasks[0]
        agent = f"-{t.agent.label}" if self.several_agents else ""
        return f"{t.case.case_id}[{t.provider}-r{t.repeat}{agent}]"

    @property
    def param_id(self) -> str:
        """The id as a parametrize id (pytest adds the brackets)."""
        t = self.tasks[0]
        agent = f"-{t.agent.label}" if self.several_agents else ""
        return f"{t.case.case_id}-{t.provider}-r{t.repeat}{agent}"

    def check(self) -> None:
        """Replay (or record) every repeat; raise AssertionError with the gate's notes on failure."""
        failure = self.failure()
        if failure:
            raise AssertionError(failure)

    def failure(self) -> str | None:
        from portagent.contracts.errors import PortagentError

        try:
            return self._run()
        except PortagentError as e:
            return e.render()

    def _run(self) -> str | None:
        from portagent.runtime.eval_plan import check_cassettes
        from portagent.runtime.eval_pool import run_tasks
        from portagent.runtime.record_tasks import record_tasks

        if self.record:
            outs = record_tasks(self.tasks, source="emulator", verify=False)
            failed = [o for o in outs if o.action == "failed"]
            if failed:
                return "\n".join(f"{o.task.label}: {o.detail}" for o in failed)
            self.outcomes = [_score_recording(t) for t in self.tasks]
        else:
            check_cassettes(self.loaded, self.tasks, self.cassettes, repeats_given=False)
            self.outcomes = run_tasks(self.tasks, in_process=True).outcomes
        bad = [o for o in self.outcomes if not o.score.passed]
        if not bad:
            return None
        t = self.tasks[0]
        lines = [
            f"case {t.case.case_id} on {t.provider} (agent {t.agent.label}"
            f"{', recorded' if self.record else ''}): "
            f"{len(self.outcomes) - len(bad)}/{len(self.outcomes)} runs passed"
        ]
        for o in bad:
            s = o.score
            lines.append(f"  r{s.provenance.repeat}: failed {', '.join(s.failed_factors)}")
            lines += [f"    - {n}" for n in s.notes]
        return "\n".join(lines)


def _score_recording(task: RunTask) -> RunOutcome:
    """Score the run a recording just wrote (its trace in the cassette folder), as a replay would."""
    import json

    from portagent.evals.scoring import score_run
    from portagent.runtime.eval_plan import RunOutcome
    from portagent.tracing.recorder import read_trace

    assert task.cassette is not None
    events = read_trace(task.cassette / "trace.jsonl")
    score = score_run(events, task.case, task.thresholds)
    error = None
    try:
        result = json.loads((task.cassette / "run.json").read_text(encoding="utf-8")).get("result") or {}
    except (OSError, ValueError):
        result = {}
    if result.get("status") == "failed":
        error = f"{result.get('stop_reason')}: {result.get('error')}" if result.get("error") else "failed"
        score = score.model_copy(update={"notes": [f"run failed ({error})", *score.notes]})
    return RunOutcome(task.index, score, error)


def case_locations(loaded: Any) -> dict[str, tuple[Path, int]]:
    """case_id → (file, 1-based line) of each case: the suite's inline ``cases`` and its ``case_files``."""
    import yaml

    from portagent.contracts.errors import PortagentError
    from portagent.contracts.loader import read_document

    out: dict[str, tuple[Path, int]] = {}

    def items(node: Any) -> list[Any]:
        return list(node.value) if isinstance(node, yaml.SequenceNode) else [node]

    def take(path: Path, nodes: list[Any]) -> None:
        for item in nodes:
            if not isinstance(item, yaml.MappingNode):
                continue
            for k, v in item.value:
                if getattr(k, "value", None) == "case_id" and isinstance(v, yaml.ScalarNode):
                    out.setdefault(str(v.value), (path, item.start_mark.line + 1))

    try:
        suite_path = Path(loaded.path)
        _, root = read_document(suite_path)
        if isinstance(root, yaml.MappingNode):
            for k, v in root.value:
                if getattr(k, "value", None) == "cases":
                    take(suite_path, items(v))
        for rel in loaded.suite.case_files:
            case_path = (suite_path.parent / rel).resolve()
            _, cnode = read_document(case_path)
            if cnode is not None:
                take(case_path, items(cnode))
    except (PortagentError, OSError):  # located or not, the items still run
        pass
    return out


def plan_case_runs(
    suite: str | Path,
    *,
    record: bool = False,
    cassettes: str = "cassettes",
    providers: list[str] | None = None,
    role: str = "all",
) -> Iterator[CaseRuns]:
    """One CaseRuns per planned run: agent version × case × provider × repeat, in plan order."""
    from portagent.contracts.loaded_suite import load_suite
    from portagent.runtime.eval_plan import plan_runs, resolve_agents

    loaded = load_suite(suite)
    agents = [a for a in resolve_agents(loaded) if role == "all" or a.role == role]
    tasks = plan_runs(
        loaded,
        mode="emulator" if record else "replay",
        providers=providers,
        cassettes=cassettes,
        agents=agents,
        check=False,
    )
    several = len({t.agent.label for t in tasks}) > 1
    where = case_locations(loaded)
    for t in tasks:
        yield CaseRuns(
            [t],
            record=record,
            loaded=loaded,
            cassettes=cassettes,
            several_agents=several,
            location=where.get(t.case.case_id),
        )


class SuiteFile(pytest.File):
    """A suite file given with ``--portagent-suite``."""

    def collect(self) -> Iterator[pytest.Item]:
        from portagent.contracts.errors import PortagentError

        opt = self.config.getoption
        providers = [p.strip() for p in (opt("portagent_providers") or "").split(",") if p.strip()] or None
        try:
            groups = list(
                plan_case_runs(
                    self.path,
                    record=bool(opt("portagent_record")),
                    cassettes=opt("portagent_cassettes"),
                    providers=providers,
                    role=opt("portagent_agent"),
                )
            )
        except PortagentError as e:
            raise self.CollectError(f"{self.path}: {e.render()}") from None
        for g in groups:
            yield CaseItem.from_parent(self, name=g.id, runs=g)


class CaseItem(pytest.Item):
    """One case × provider × agent version."""

    def __init__(self, *, runs: CaseRuns, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.runs = runs
        t = runs.tasks[0]
        self.add_marker(pytest.mark.portagent)
        self.user_properties += [
            ("provider", t.provider),
            ("agent_version", t.agent.version),
            ("case_id", t.case.case_id),
            ("repeat", str(t.repeat)),
        ]
        if runs.location is not None:
            self.user_properties += [("file", str(runs.location[0])), ("line", str(runs.location[1]))]

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the case is written: its file and line (0-based for pytest)."""
        if self.runs.location is not None:
            path, line = self.runs.location
            return path, line - 1, self.name
        return self.path, None, self.name

    def runtest(self) -> None:
        failure = self.runs.failure()
        if failure:
            raise CaseFailed(failure)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


class CaseFailed(Exception):
    """A case's runs did not pass (the message holds the gate's notes)."""


# -- the marker -------------------------------------------------------------------------------------


_ROLES = ("all", "agent", "baseline", "candidate")
"""The roles an agent version has in a suite (``--portagent-agent`` and the marker's ``role``)."""
_MARKER_KWARGS = ("providers", "cassettes", "role")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``portagent_run`` from the test's ``portagent_suite`` marker. A mistake in the marker
    or the suite is one collection error naming the test (pytest shows a ``CollectError`` as its message
    alone, as for ``--portagent-suite``): raised as anything else, pytest printed a traceback through
    pluggy, and a mistyped role planned nothing, which pytest skipped ("got empty parameter set") with
    exit 0."""
    from portagent.contracts.errors import PortagentError

    marker = metafunc.definition.get_closest_marker("portagent_suite")
    if marker is None or "portagent_run" not in metafunc.fixturenames:
        return
    where = f"{metafunc.definition.nodeid}: @pytest.mark.portagent_suite"
    try:
        suite, cassettes, providers, role = _marker_arguments(
            marker, metafunc.config.rootpath, Path(metafunc.definition.path).parent
        )
        groups = list(
            plan_case_runs(
                suite,
                record=bool(metafunc.config.getoption("portagent_record")),
                cassettes=str(cassettes),
                providers=providers,
                role=role,
            )
        )
    except _MarkerError as e:
        raise pytest.Collector.CollectError(f"{where}: {e}") from None
    except PortagentError as e:
        raise pytest.Collector.CollectError(f"{where}: {e.render()}") from None
    if not groups:
        raise pytest.Collector.CollectError(
            f"{where}: suite {str(suite)!r} plans no run"
            + (f" of an agent version with role {role!r}" if role != "all" else "")
            + (f" on {', '.join(providers)}" if providers else "")
        )
    metafunc.parametrize("portagent_run", groups, ids=[g.param_id for g in groups])


class _MarkerError(Exception):
    """A ``portagent_suite`` marker given wrong arguments (the message says which and what is expected)."""


def _marker_arguments(
    marker: pytest.Mark, rootdir: Path, test_folder: Path
) -> tuple[Path, Path, list[str] | None, str]:
    """(suite, cassettes, providers, role) of a ``portagent_suite`` marker, checked: a wrong argument is a
    ``_MarkerError`` saying what is expected.

    A relative suite path is looked for from pytest's rootdir (the folder of ``pytest.ini`` or
    ``pyproject.toml``, pytest's header shows it), then from the test file's folder; a relative
    ``cassettes`` is taken from the same folder the suite was found from. Neither depends on the folder
    pytest is launched from when the project has such a file: the suite used to be looked for from the
    working directory, then the test file's folder, and the cassettes always from the working directory,
    so one test passed or failed depending on where pytest ran."""
    import os

    if len(marker.args) != 1 or not isinstance(marker.args[0], (str, os.PathLike)):
        raise _MarkerError(
            "give the suite path as its one positional argument, e.g. "
            "portagent_suite('suite.yaml', providers=['openai'])"
            + ("" if len(marker.args) <= 1 else f" (got {len(marker.args)}: the others go by name)")
        )
    unknown = sorted(set(marker.kwargs) - set(_MARKER_KWARGS))
    if unknown:
        raise _MarkerError(
            f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(it takes {', '.join(_MARKER_KWARGS)})"
        )
    providers = marker.kwargs.get("providers")
    if providers is not None and (
        isinstance(providers, str)
        or not isinstance(providers, (list, tuple))
        or not providers
        or not all(isinstance(p, str) and p.strip() for p in providers)
    ):
        raise _MarkerError(
            f"providers must be a non-empty list of provider names, e.g. providers=['openai'], "
            f"got {providers!r}"
        )
    role = marker.kwargs.get("role", "all")
    if role not in _ROLES:
        raise _MarkerError(f"role must be one of {', '.join(_ROLES)}, got {role!r}")
    cassettes = marker.kwargs.get("cassettes", "cassettes")
    if not isinstance(cassettes, (str, os.PathLike)) or not str(cassettes):
        raise _MarkerError(f"cassettes must be a folder path, got {cassettes!r}")
    suite = Path(marker.args[0])
    base = rootdir
    if not suite.is_absolute():
        found = next((b for b in (rootdir, test_folder) if (b / suite).is_file()), None)
        if found is None:
            raise _MarkerError(
                f"suite file not found: {str(suite)!r} is neither in pytest's rootdir ({rootdir}) nor in "
                f"the test file's folder ({test_folder})"
            )
        base, suite = found, Path(os.path.normpath(found / suite))
    return suite, base / cassettes, [p.strip() for p in providers] if providers else None, role
