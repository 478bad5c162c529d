import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

import slow_tests
from _support import EXAMPLES, IN_CI, REPO, SAMPLES, require_path, run_cli  # noqa: F401

# Property tests check what holds, never how fast: on a loaded 2-core CI machine a worker's first draws
# can take seconds (cold imports, other workers), and Hypothesis's timing checks (too_slow, and the
# per-example deadline) would fail a test whose assertions all pass. No test here is a timed assertion.
settings.register_profile("portagent", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("portagent")

# A job started in the background by a non-interactive shell (`cmd &`, some CI runners) inherits SIGINT
# ignored, and so does every process it starts: the tests that press Ctrl-C on a portagent subprocess would
# then wait for nothing. A handler set here becomes the default again in each child at exec.
signal.signal(signal.SIGINT, signal.default_int_handler)
# A blocked signal is inherited the same way (the mask survives exec): with SIGALRM blocked, pytest-timeout
# never fires and a stuck test holds the whole run; with SIGTERM/SIGINT blocked, the tests that stop a
# portagent subprocess wait for nothing.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM, signal.SIGINT, signal.SIGTERM})

# The suite starts hundreds of interpreters (CLI subprocesses, eval workers, pytester runs). With
# PYTHONDONTWRITEBYTECODE set (some shells and containers set it), each of them compiled portagent's ~240
# modules from source again, and pytest re-rewrote every test module in every xdist worker: about a second
# of CPU per process. The suite writes its bytecode caches whatever the shell says (__pycache__ is ignored
# by git); portagent itself leaves the setting to the user.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# The MCP SDK's stdio client takes ``errlog=sys.stderr`` as a default bound when ``mcp.client.stdio`` is
# first imported. Imported first inside a test whose output is redirected to a StringIO (``run_cli``), every
# later ``Client(params)`` in that process failed with "fileno" — a test passed or failed with the order it
# ran in. Imported here, the default is the session's stderr.
try:
    import mcp.client.stdio  # noqa: F401
except ImportError:  # the mcp extra is not installed: its tests skip
    pass


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Every test gets its own PORTAGENT_HOME so state never leaks between tests."""
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / ".portagent"))
    yield


# `pytest -m "not slow"` is the fast loop: the tests and shared fixtures a full run measured as slow are
# listed in slow_tests.txt and marked by slow_tests.Marks (tests/slow_tests.py says how it is measured).
# The same measurements order the modules heaviest first (slow_tests.heaviest_modules_first); xdist's own
# reordering by test count would undo that, so it is turned off.
def pytest_configure(config):
    config.pluginmanager.register(slow_tests.Marks(), "portagent-slow-tests")
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
