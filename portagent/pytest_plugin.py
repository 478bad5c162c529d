"""pytest plugin (entry point ``pytest11: portagent``): eval suites as test items.

    pytest --portagent-suite examples/support_desk/suite.yaml              # replay every case × provider
    pytest --portagent-suite SUITE --portagent-providers openai            # one provider
    pytest --portagent-suite SUITE --portagent-record                      # record instead (emulator)

Each case × provider × agent version becomes one item (``<agent>@<version>::<case>[<provider>]``) that
replays its cassettes (every repeat) offline and fails with the gate's notes when a run fails; a
missing cassette fails with the ``portagent record`` command that creates it. Without test paths on
the command line only the suites are collected; with paths, both.

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
        choices=["all", "agent", "baseline", "candidate"],
        help="only the agent version with this role (default: all)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "portagent_suite(path, providers=None, cassettes='cassettes', role='all'): parametrize the "
        "test's 'portagent_run' argument with every case x provider x agent version of the suite",
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
    """The repeats of one case on one provider and agent version, replayed (or recorded) together."""

    tasks: list[RunTask]
    """RunTasks (portagent.runtime.eval_run), one per repeat."""
    record: bool = False
    """Record instead of replaying."""
    loaded: Any = None
    """The LoadedSuite (for the record command of a missing cassette)."""
    cassettes: str = "cassettes"
    outcomes: list[RunOutcome] = field(default_factory=list)

    @property
    def id(self) -> str:
        t = self.tasks[0]
        return f"{t.agent.label}::{t.case.case_id}[{t.provider}]"

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
        from portagent.runtime.eval_run import record_tasks

        if self.record:
            outs = record_tasks(self.tasks, source="emulator", verify=False)
            failed = [o for o in outs if o.action == "failed"]
            return "\n".join(f"{o.task.label}: {o.detail}" for o in failed) or None
        check_cassettes(self.loaded, self.tasks, self.cassettes, repeats_given=False)
        self.outcomes = run_tasks(self.tasks, in_process=True).outcomes
        bad = [o for o in self.outcomes if not o.score.passed]
        if not bad:
            return None
        t = self.tasks[0]
        lines = [
            f"case {t.case.case_id} on {t.provider} (agent {t.agent.label}): "
            f"{len(self.outcomes) - len(bad)}/{len(self.outcomes)} runs passed"
        ]
        for o in bad:
            s = o.score
            lines.append(f"  r{s.provenance.repeat}: failed {', '.join(s.failed_factors)}")
            lines += [f"    - {n}" for n in s.notes]
        return "\n".join(lines)


def plan_case_runs(
    suite: str | Path,
    *,
    record: bool = False,
    cassettes: str = "cassettes",
    providers: list[str] | None = None,
    role: str = "all",
) -> Iterator[CaseRuns]:
    """Group a suite's planned runs by agent version × case × provider."""
    from portagent.contracts.suite import load_suite
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
    groups: dict[tuple[str, str, str], list[RunTask]] = {}
    for t in tasks:
        groups.setdefault((t.agent.label, t.case.case_id, t.provider), []).append(t)
    for group in groups.values():
        yield CaseRuns(group, record=record, loaded=loaded, cassettes=cassettes)


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
        ]

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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("portagent_suite")
    if marker is None or "portagent_run" not in metafunc.fixturenames:
        return
    if not marker.args:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: portagent_suite needs the suite path")
    suite = Path(marker.args[0])
    if not suite.is_absolute():
        suite = Path(metafunc.definition.path).parent / suite if not suite.exists() else suite
    record = bool(metafunc.config.getoption("portagent_record"))
    groups = list(
        plan_case_runs(
            suite,
            record=record,
            cassettes=marker.kwargs.get("cassettes", "cassettes"),
            providers=marker.kwargs.get("providers"),
            role=marker.kwargs.get("role", "all"),
        )
    )
    metafunc.parametrize("portagent_run", groups, ids=[g.id for g in groups])
