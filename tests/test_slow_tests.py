"""The fast loop's list (tests/slow_tests.py): junit names become node ids, the list reads back what was
written, and conftest marks both a listed test and every user of a listed shared fixture."""

import textwrap

import pytest
import slow_tests
from _support import PYTESTER_INI

pytest_plugins = ["pytester"]


def test_junit_names_become_node_ids():
    assert (
        slow_tests.node_id("tests.test_slow_tests", "test_x[a.b-c]")
        == "tests/test_slow_tests.py::test_x[a.b-c]"
    )
    assert (
        slow_tests.node_id("tests.adapters.claude.test_claude_adapter.TestThing", "test_y")
        == "tests/adapters/claude/test_claude_adapter.py::TestThing::test_y"
    )
    with pytest.raises(ValueError, match="no test module"):
        slow_tests.node_id("tests.no_such_module", "test_z")


def test_the_list_reads_back_what_was_written(tmp_path, monkeypatch):
    monkeypatch.setattr(slow_tests, "LIST", tmp_path / "slow_tests.txt")
    at = slow_tests.THRESHOLD_S
    counts = slow_tests.write(
        {"tests/a.py::test_slow": at, "tests/a.py::test_fast": at - 0.01},
        {"tests/a.py::shared": 3.0, "tests::cheap": at / 2},
    )
    assert counts == (1, 1)
    assert slow_tests.listed() == ({"tests/a.py::test_slow"}, {"tests/a.py::shared"})


def test_keep_adds_a_runs_measurements_to_the_list_and_drops_nothing(tmp_path, monkeypatch):
    """A test near the threshold is slow in one run and fast in the next: rebuilt from one run, the list
    let such tests back into the fast loop. ``--keep`` keeps what the list named and adds the new."""
    monkeypatch.setattr(slow_tests, "LIST", tmp_path / "slow_tests.txt")
    slow_tests.write({"tests/test_slow_tests.py::test_before": 0.5}, {"tests::old_fixture": 2.0})
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="tests.test_slow_tests" name="test_before" time="0.01"/>'
        '<testcase classname="tests.test_slow_tests" name="test_now" time="0.3"/></testsuite></testsuites>',
        encoding="utf-8",
    )
    assert slow_tests.main(["--keep", str(junit)]) == 0
    tests, fixtures = slow_tests.measured()
    assert tests == {"tests/test_slow_tests.py::test_before": 0.5, "tests/test_slow_tests.py::test_now": 0.3}
    assert fixtures == {"tests::old_fixture": 2.0}
    assert slow_tests.main([str(junit)]) == 0  # without it, the list is this run's alone
    assert slow_tests.listed() == ({"tests/test_slow_tests.py::test_now"}, set())


def test_conftest_marks_listed_tests_and_the_users_of_a_listed_fixture(pytester, monkeypatch):
    pytester.makefile(".ini", pytest=PYTESTER_INI + "markers =\n  slow: slow\n")
    pytester.makepyfile(
        test_mod=textwrap.dedent(
            """
            import pytest

            @pytest.fixture(scope="module")
            def shared():
                return 1

            def test_listed(): pass
            def test_uses_shared(shared): pass
            def test_plain(): pass
            """
        )
    )
    pytester.makeconftest(
        textwrap.dedent(
            """
            import pytest
            import slow_tests

            def pytest_configure(config):
                config.pluginmanager.register(slow_tests.Marks(), "slow-tests")

            class Case(pytest.Item):  # a plugin's own item, without fixtures (as portagent's eval cases)
                def runtest(self):
                    pass

            class Cases(pytest.File):
                def collect(self):
                    yield Case.from_parent(self, name="case")

            def pytest_collect_file(file_path, parent):
                if file_path.suffix == ".cases":
                    return Cases.from_parent(parent, path=file_path)
            """
        )
    )
    pytester.makefile(".cases", suite="")
    listing = pytester.path / "slow_tests.txt"
    listing.write_text("0.90\ttest\ttest_mod.py::test_listed\n3.00\tfixture\ttest_mod.py::shared\n")
    monkeypatch.setattr(slow_tests, "LIST", listing)
    result = pytester.inline_run("--collect-only", "-m", "not slow")
    kept = [item.nodeid for item in result.getcalls("pytest_collection_finish")[0].session.items]
    assert sorted(kept) == ["suite.cases::case", "test_mod.py::test_plain"]


def test_modules_run_heaviest_first_and_keep_their_own_order():
    class Item:
        def __init__(self, nodeid: str) -> None:
            self.nodeid = nodeid

    items = [Item(n) for n in ("a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "c.py::t2", "c.py::t3")]
    # b's one test outweighs a's two; c's three unlisted tests weigh least: xdist's default (by number of
    # tests) would have started c first and b last.
    seconds = {"a.py::t2": 4.0, "b.py::t1": 30.0}
    ordered = [i.nodeid for i in slow_tests.heaviest_modules_first(items, seconds)]
    assert ordered == ["b.py::t1", "a.py::t1", "a.py::t2", "c.py::t1", "c.py::t2", "c.py::t3"]


def test_conftest_turns_off_xdists_reordering_by_test_count(pytestconfig):
    if hasattr(pytestconfig.option, "loadscopereorder"):
        assert pytestconfig.option.loadscopereorder is False
