"""The ``portagent_suite`` marker of the pytest plugin: a mistake in its arguments or its suite is one
collection error naming the test (no traceback, non-zero exit, never a silently skipped test), and its
relative paths resolve from one base, whichever folder pytest is launched from. Runs pytest in a
subprocess: a fresh interpreter loading the plugin from its entry point is what a user's ``pytest`` is."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import EXAMPLES, PYTESTER_INI, REPO, require_path

pytest_plugins = ["pytester"]

SUITE = EXAMPLES / "support_desk" / "suite.yaml"
CASSETTES = REPO / "cassettes"


def _marked(pytester: pytest.Pytester, arguments: str) -> pytest.RunResult:
    pytester.makeini(PYTESTER_INI)
    pytester.makepyfile(
        test_desk=f"""
        import pytest

        @pytest.mark.portagent_suite({arguments})
        def test_desk(portagent_run):
            portagent_run.check()
        """
    )
    return pytester.runpytest_subprocess("-q")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (  # a typo planned no run: pytest skipped the test ("got empty parameter set") and exited 0
            f"{str(SUITE)!r}, providers=['openai'], role='baselin'",
            "role must be one of all, agent, baseline, candidate, got 'baselin'",
        ),
        (  # a string was read as a list of letters: "provider(s) o, p, e, n, a, i not in suite"
            f"{str(SUITE)!r}, providers='openai'",
            "providers must be a non-empty list of provider names, e.g. providers=['openai'], got 'openai'",
        ),
        (  # an argument the marker does not take was ignored: every case ran
            f"{str(SUITE)!r}, providers=['openai'], cases=['refund-rule']",
            "unknown argument cases (it takes providers, cassettes, role)",
        ),
        (  # two positional arguments: the second was ignored
            f"{str(SUITE)!r}, ['openai']",
            "give the suite path as its one positional argument",
        ),
    ],
    ids=["role-typo", "providers-string", "unknown-argument", "two-positional"],
)
def test_a_wrong_marker_argument_is_one_collection_error(
    pytester: pytest.Pytester, arguments: str, message: str
) -> None:
    result = _marked(pytester, arguments)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # 1 error during collection
    out = result.stdout.str()  # (plain text: fnmatch would read the brackets as a pattern)
    assert f"test_desk.py::test_desk: @pytest.mark.portagent_suite: {message}" in out, out
    assert "Traceback" not in out and "empty parameter set" not in out and "SKIPPED" not in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            "'no_such/suite.yaml'",
            "suite file not found: 'no_such/suite.yaml' is neither in pytest's rootdir",
        ),
        (f"{str(SUITE)!r}, providers=['opena']", "provider(s) opena not in suite 'support-desk'"),
    ],
    ids=["missing-suite", "unknown-provider"],
)
def test_a_bad_suite_or_provider_is_one_message_without_traceback(
    pytester: pytest.Pytester, arguments: str, message: str
) -> None:
    result = _marked(pytester, arguments)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "test_desk.py::test_desk: @pytest.mark.portagent_suite: " in out and message in out, out
    assert "Traceback" not in out and "pluggy" not in out
    assert len(out.splitlines()) < 12, out  # the message, pytest's headers; not a 35-line traceback


def _pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("layout", ["beside-the-test", "at-the-rootdir"])
def test_the_suite_and_its_cassettes_resolve_from_one_base_wherever_pytest_starts(
    tmp_path: Path, layout: str
) -> None:
    """A project with a ``pytest.ini`` (pytest's rootdir) and its test in ``tests/``: either the suite
    beside the test file (found from the test file's folder) with its cassettes beside it too, or an
    absolute suite with the cassettes at the rootdir. The cassettes were taken from the working directory
    whatever the suite's base: launched from the project root the first failed with missing cassettes,
    launched from ``tests/`` the second did."""
    require_path(CASSETTES / "support-desk", "the demo's committed cassettes")
    root = tmp_path / "project"
    tests = root / "tests"
    tests.mkdir(parents=True)
    (root / "pytest.ini").write_text(PYTESTER_INI, encoding="utf-8")
    if layout == "beside-the-test":
        shutil.copytree(EXAMPLES / "support_desk", tests / "support_desk")
        (tests / "cassettes").symlink_to(CASSETTES, target_is_directory=True)
        suite = "support_desk/suite.yaml"
    else:
        (root / "cassettes").symlink_to(CASSETTES, target_is_directory=True)
        suite = str(SUITE)
    (tests / "test_desk.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.portagent_suite({suite!r}, providers=['openai'], role='baseline')\n"
        "def test_desk(portagent_run):\n"
        "    portagent_run.check()\n",
        encoding="utf-8",
    )
    for folder, where in ((root, "tests/test_desk.py"), (tests, "test_desk.py")):
        done = _pytest_in(folder, where, "-k", "refund-rule")
        assert done.returncode == 0, f"launched from {folder}:\n{done.stdout}\n{done.stderr}"
        assert "2 passed" in done.stdout, done.stdout
