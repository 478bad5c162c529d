"""Which tests are ``slow``: measured, not guessed.

``pytest -m "not slow"`` is the fast loop (CONTRIBUTING.md). A test is slow when a full run measured it at
``THRESHOLD_S`` or more (set-up, call and tear-down together), or when it uses a shared fixture (module,
class, package or session scope) whose set-up took that long: the fixture's first user pays for it, and
once the slow tests are deselected the next user would. The measurements live in ``slow_tests.txt`` next
to this file; ``conftest.py`` marks the tests. Tests that start a process themselves (the Claude Code CLI,
Ray) also carry the mark in their own module, whatever they measured.

Refresh the list after adding heavy tests (a test not listed counts as fast until measured): a full run,
then a fast-loop run (a worker's first test of an SDK pays its lazy imports: deselect the one that paid
them in the full run and the next one does), each test taking its largest time::

    PORTAGENT_FIXTURE_TIMES=/tmp/fixtures .venv/bin/python -m pytest -n auto --maxprocesses 4 \\
        --dist loadscope --junitxml=/tmp/full.xml
    .venv/bin/python tests/slow_tests.py --fixtures /tmp/fixtures /tmp/full.xml
    .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadscope -m "not slow" --junitxml=/tmp/fast.xml
    .venv/bin/python tests/slow_tests.py --fixtures /tmp/fixtures /tmp/full.xml /tmp/fast.xml

``--keep`` (first) keeps every test and fixture the list names already, adding what the runs measured: one
full run on a shared 2-core machine times a test near the threshold at half or twice another run's figure,
and a list rebuilt from one run put ~350 such tests back into the fast loop (96 s instead of 62 s).

The threshold is low (0.15 s) because the fast loop is the suite's cheap majority: on 2 cores it keeps about
2 490 of 3 940 tests — every adapter, floor and contract — in about a minute. A run prints, at its end,
the unmarked tests that took ``Marks.UNMARKED_S`` or more.
"""

from __future__ import annotations

import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

THRESHOLD_S = 0.15
UNLISTED_S = THRESHOLD_S / 3  # a test the list does not name: under the threshold, most far under
LIST = Path(__file__).with_name("slow_tests.txt")
ROOT = Path(__file__).resolve().parent.parent
FIXTURE_TIMES = "PORTAGENT_FIXTURE_TIMES"

_HEADER = (
    "# Measured at {threshold} s or more: seconds, then `test` and a node id, or `fixture` and where it is\n"
    "# defined::its name (a shared fixture's set-up). Written by tests/slow_tests.py; conftest.py marks these\n"
    '# tests, and every test using these fixtures, slow so that `pytest -m "not slow"` is the fast loop.\n'
)


def measured() -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per test node id and per fixture id in ``slow_tests.txt`` (empty when the file is missing)."""
    tests: dict[str, float] = {}
    fixtures: dict[str, float] = {}
    if LIST.is_file():
        for line in LIST.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                seconds, kind, name = line.split("\t", 2)
                (tests if kind == "test" else fixtures)[name] = float(seconds)
    return tests, fixtures


def listed() -> tuple[set[str], set[str]]:
    """The test node ids and fixture ids in ``slow_tests.txt``."""
    tests, fixtures = measured()
    return set(tests), set(fixtures)


def heaviest_modules_first(items: list[Any], seconds: dict[str, float]) -> list[Any]:
    """``items`` with whole modules ordered by their measured seconds, heaviest first (a test not in the
    list counts ``UNLISTED_S``); the order inside a module is kept.

    pytest-xdist's ``--dist loadscope`` hands each worker a module at a time, and by default orders the
    modules by their number of tests: a module of one 30-second test (a killed eval, a walkthrough) then
    starts last, while the other worker idles. Largest-first is the classic cure for that tail; conftest.py
    turns the test-count reordering off so this order is the one the scheduler uses.
    """
    weight: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        weight[module] = weight.get(module, 0.0) + seconds.get(item.nodeid, UNLISTED_S)
    order = {item.nodeid: n for n, item in enumerate(items)}
    return sorted(items, key=lambda i: (-weight[i.nodeid.split("::", 1)[0]], order[i.nodeid]))


def fixture_id(fixturedef: Any) -> str:
    """Where a fixture is defined (a node id prefix, "" for a plugin's) and its name."""
    return f"{fixturedef.baseid}::{fixturedef.argname}"


def shared_fixtures(item: Any) -> Iterator[str]:
    """The ids of the shared (not function-scoped) fixtures a collected test uses."""
    info = getattr(item, "_fixtureinfo", None)  # a plugin's own items (portagent's eval cases) have none
    if info is None:
        return
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope != "function":
            yield fixture_id(defs[-1])


class FixtureClock:
    """Times each shared fixture's set-up into ``$PORTAGENT_FIXTURE_TIMES/<pid>.jsonl`` (one file per
    process: xdist workers write side by side)."""

    def __init__(self, folder: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        self._path = Path(folder) / f"{os.getpid()}.jsonl"

    def timed(self, fixturedef: Any) -> Any:
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            if fixturedef.scope != "function":
                line = {"fixture": fixture_id(fixturedef), "seconds": time.perf_counter() - start}
                with self._path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line) + "\n")


class Marks:
    """The plugin ``conftest.py`` registers: marks the listed tests and the users of listed fixtures slow,
    times shared fixtures when ``$PORTAGENT_FIXTURE_TIMES`` is set, and names at the end of a run the
    unmarked tests that took ``UNMARKED_S`` or more."""

    UNMARKED_S = 2.0

    def __init__(self) -> None:
        self.seconds, fixture_seconds = measured()
        self.tests, self.fixtures = set(self.seconds), set(fixture_seconds)
        folder = os.environ.get(FIXTURE_TIMES)
        self.clock = FixtureClock(folder) if folder else None
        self.took: dict[str, float] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            if item.nodeid in self.tests or not self.fixtures.isdisjoint(shared_fixtures(item)):
                item.add_marker(pytest.mark.slow)
        items[:] = heaviest_modules_first(items, self.seconds)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Any:
        if self.clock is None:
            return (yield)
        return (yield from self.clock.timed(fixturedef))

    def pytest_runtest_logreport(self, report: Any) -> None:
        if "slow" not in report.keywords:
            self.took[report.nodeid] = self.took.get(report.nodeid, 0.0) + report.duration

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        late = sorted(((s, n) for n, s in self.took.items() if s >= self.UNMARKED_S), reverse=True)
        if late:
            terminalreporter.write_sep(
                "-", f"{len(late)} tests not marked slow took {self.UNMARKED_S:g} s or more"
            )
            for seconds, nodeid in late[:15]:
                terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")
            terminalreporter.write_line(
                "refresh tests/slow_tests.txt if they stay slow (tests/slow_tests.py says how)"
            )


def node_id(classname: str, name: str) -> str:
    """A junit ``classname`` (dotted module, maybe a class after it) and ``name`` as a pytest node id."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = Path(*parts[:cut]).with_suffix(".py")
        if (ROOT / module).is_file():
            return "::".join([module.as_posix(), *parts[cut:], name])
    raise ValueError(f"no test module for {classname!r}")


def measured_tests(junit: Path) -> dict[str, float]:
    """Seconds per node id in a pytest ``--junitxml`` report."""
    times: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        times[node_id(case.get("classname", ""), case.get("name", ""))] = float(case.get("time", "0"))
    return times


def measured_fixtures(folder: Path) -> dict[str, float]:
    """The longest set-up seen per shared fixture in a ``FixtureClock`` folder."""
    times: dict[str, float] = {}
    for log in folder.glob("*.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            times[entry["fixture"]] = max(entry["seconds"], times.get(entry["fixture"], 0.0))
    return times


def write(tests: dict[str, float], fixtures: dict[str, float]) -> tuple[int, int]:
    rows = [(s, "test", n) for n, s in tests.items() if s >= THRESHOLD_S]
    rows += [(s, "fixture", f) for f, s in fixtures.items() if s >= THRESHOLD_S]
    rows.sort(key=lambda r: (r[1], r[2]))
    text = _HEADER.format(threshold=THRESHOLD_S) + "".join(f"{s:.2f}\t{k}\t{n}\n" for s, k, n in rows)
    tmp = LIST.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(LIST)
    return sum(r[1] == "test" for r in rows), sum(r[1] == "fixture" for r in rows)


def main(argv: list[str]) -> int:
    fixtures: dict[str, float] = {}
    keep = argv[:1] == ["--keep"]
    argv = argv[1:] if keep else argv
    if argv[:1] == ["--fixtures"] and len(argv) > 1 and Path(argv[1]).is_dir():
        fixtures = measured_fixtures(Path(argv[1]))
        argv = argv[2:]
    if not argv or not all(Path(a).is_file() for a in argv):
        print("usage: python tests/slow_tests.py [--keep] [--fixtures DIR] JUNIT_XML…", file=sys.stderr)
        return 2
    tests: dict[str, float] = {}
    if (
        keep
    ):  # what earlier runs measured stays: a test near the threshold is slow in one run, fast in the next
        tests, kept = measured()
        for name, seconds in kept.items():
            fixtures[name] = max(seconds, fixtures.get(name, 0.0))
    for report in argv:
        for nodeid, seconds in measured_tests(Path(report)).items():
            tests[nodeid] = max(seconds, tests.get(nodeid, 0.0))
    slow, shared = write(tests, fixtures)
    print(
        f"{slow} of {len(tests)} tests and {shared} shared fixtures at {THRESHOLD_S} s or more -> {LIST.name}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
