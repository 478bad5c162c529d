"""The pytest plugin replays a case the same way however often the session replays it: the same suite
given with ``--portagent-suite`` and with a ``portagent_suite`` marker (as docs/reports.md shows both)
replays every case twice in one process, and the second replay must not meet what the first left in
its handler modules (the support desk numbers tickets per run scope, and a scope is the same each time
a case is replayed). Runs in a subprocess (``runpytest_subprocess``): a fresh interpreter is what a
user's ``pytest`` is, and the plugin's items replay in-process."""

from __future__ import annotations

import pytest
from _support import EXAMPLES, PYTESTER_INI, REPO, require_path

pytest_plugins = ["pytester"]

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
CASSETTES = REPO / "cassettes"


def test_a_case_replayed_twice_in_one_session_replays_as_it_does_alone(pytester: pytest.Pytester) -> None:
    require_path(CASSETTES / "support-desk", "the demo's committed cassettes")
    pytester.makeini(PYTESTER_INI)
    pytester.makepyfile(
        test_desk=f"""
        import pytest

        @pytest.mark.portagent_suite(
            {str(SUITE)!r}, providers=["openai"], cassettes={str(CASSETTES)!r}, role="baseline"
        )
        def test_desk(portagent_run):
            portagent_run.check()
        """
    )
    result = pytester.runpytest_subprocess(
        "--portagent-suite",
        str(SUITE),
        "--portagent-cassettes",
        str(CASSETTES),
        "--portagent-providers",
        "openai",
        "--portagent-agent",
        "baseline",
        "-k",
        "ticket or idempotent",  # the cases about a ticket (3 of the 4 create one), 2 repeats each
        "test_desk.py",
    )
    # the suite's items run first, then the marker's: each of the 8 runs is made twice in the process
    result.assert_outcomes(passed=16, deselected=40)
    assert "TCK-0002" not in result.stdout.str()


def test_a_case_recorded_twice_in_one_session_records_as_it_does_alone(pytester: pytest.Pytester) -> None:
    """Recording happens in the pytest process too: the second recording of a scope found the first's
    tickets and wrote ``TCK-0002`` into the cassette, which every later replay (a fresh process) drifts
    from."""
    pytester.makeini(PYTESTER_INI)
    cassettes = pytester.mkdir("recorded")
    pytester.makepyfile(
        test_desk=f"""
        import pytest

        @pytest.mark.portagent_suite(
            {str(SUITE)!r}, providers=["openai"], cassettes={str(cassettes)!r}, role="baseline"
        )
        def test_desk(portagent_run):
            portagent_run.check()
        """
    )
    result = pytester.runpytest_subprocess(
        "--portagent-record",
        "--portagent-suite",
        str(SUITE),
        "--portagent-cassettes",
        str(cassettes),
        "--portagent-providers",
        "openai",
        "--portagent-agent",
        "baseline",
        "-k",
        "ticket-approved",
        "test_desk.py",
    )
    result.assert_outcomes(passed=4, deselected=52)  # 2 repeats, recorded by the suite then the marker
    written = [p for p in cassettes.rglob("*") if p.is_file() and "TCK-0002" in p.read_text("utf-8")]
    assert written == []
