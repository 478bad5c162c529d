"""The fork server's preload (runtime/warm.py) does, once, the provider-independent work every worker's
first run would otherwise do itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, require_path, run_probe

PROBE = """
import sys
import portagent.runtime.warm
from portagent.adapters._shared import _tls
from portagent.core.pricing import _price
from portagent.core.secrets import _patterns

assert "vcr" in sys.modules and "portagent.recording.player" in sys.modules
assert _price.cache_info().currsize >= 1, "price table not loaded"
assert _tls.cache_info().currsize == 1, "TLS context not built"
assert _patterns.cache_info().currsize >= 1, "secret patterns not compiled"
for name in ("openai", "agents", "google.adk", "claude_agent_sdk", "anthropic", "langgraph"):
    assert name not in sys.modules, name + " imported without PORTAGENT_WARM_SDKS"
print("ok")
"""


def test_the_preload_does_the_shared_first_use_work_and_imports_no_sdk() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


POOL_FIRST = """
import multiprocessing.forkserver as fs
import sys
from pathlib import Path

from portagent.evals import load_suite
from portagent.runtime.eval_run import plan_runs, run_tasks

repo = Path(sys.argv[1])
loaded = load_suite(repo / "examples" / "support_desk" / "suite.yaml")
tasks = plan_runs(loaded, mode="replay", providers=["anthropic"], cassettes=repo / "cassettes",
                  case_ids=["refund-rule"], repeats=1)
report = run_tasks(tasks, workers=1)  # the first pool of this process: no eval warmed the fork server
assert report.outcomes and all(o.error is None for o in report.outcomes)
maps = Path(f"/proc/{fs._forkserver._forkserver_pid}/maps").read_text()
print("warm" if "pydantic_core" in maps else "cold")
"""


@pytest.mark.slow  # a fresh interpreter whose pool imports the anthropic SDK
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the fork server's /proc maps")
def test_a_pool_that_starts_the_fork_server_starts_it_warm(tmp_path: Path) -> None:
    """Whoever starts the workers' fork server first — a record's verification, the judges' calibration, a
    program calling run_tasks — it preloads the run path (runtime.warm: pydantic's compiled core among it),
    as an eval does while it plans. Started cold by the first worker, it stayed cold for every later eval of
    the process: each worker imported portagent's run path and the SDK again (seconds per worker)."""
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    env = {**os.environ, "PORTAGENT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", POOL_FIRST, str(REPO)], capture_output=True, text=True, timeout=240, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "warm", done.stdout


SUITE = REPO / "examples" / "support_desk" / "suite.yaml"

REFUSED = """
import multiprocessing.forkserver as fs
import sys

from portagent.cli import main

code = main(["eval", sys.argv[1], "--replay", "--providers", "openai", "--cassettes", sys.argv[2]])
print(code, fs._forkserver._forkserver_pid)
"""


def test_an_eval_refused_before_it_runs_starts_no_workers(tmp_path: Path) -> None:
    """An eval refused for a missing cassette leaves no fork server behind: given ``--providers`` it starts
    warming at once (below), and the refusal ends it; a server left importing openai-agents for nothing held
    the output pipes, so a caller reading the refusal (CI, ``| tee``) waited for that."""
    done = run_probe(REFUSED, SUITE, tmp_path, home=tmp_path / "home")
    assert "cassettes missing for --replay" in done.stderr, done.stderr[-3000:]
    assert done.stdout.split() == ["1", "None"], done.stdout


EARLY = """
import sys
from multiprocessing import forkserver

import portagent.contracts.loaded_suite as loaded_suite
from portagent.cli import main

seen = []
real = loaded_suite.load_suite


def load_suite(*args, **kwargs):
    seen.append(forkserver._forkserver._forkserver_pid is not None)
    return real(*args, **kwargs)


loaded_suite.load_suite = load_suite
suite, cassettes, out = sys.argv[1:]
code = main(["eval", suite, "--replay", "--providers", "openai", "--cassettes", cassettes, "--case", "refund-rule",
             "--repeats", "1", "--out", out, "--no-progress"])
print(code, seen)
"""


@pytest.mark.slow  # a fresh interpreter whose eval imports openai-agents
def test_an_eval_given_its_providers_warms_the_workers_before_it_loads_the_suite(tmp_path: Path) -> None:
    """The fork server's preload (the run path: about 1.5 s of imports) runs beside the eval's own start —
    importing the eval core, loading the suite, planning — as the demo's does; started after the plan, the
    two took turns on a machine with a CPU to spare."""
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    done = run_probe(EARLY, SUITE, REPO / "cassettes", tmp_path / "out", home=tmp_path / "home")
    assert done.stdout.split()[-2:] in (["0", "[True]"], ["1", "[True]"]), (done.stdout, done.stderr[-3000:])
    assert (tmp_path / "out" / "runs").is_dir()


INTERRUPTED = """
import sys
from multiprocessing import forkserver

import portagent.contracts.loaded_suite as loaded_suite
from portagent.cli import main


def load_suite(*args, **kwargs):
    raise KeyboardInterrupt  # Ctrl-C while the eval loads its suite, the fork server still importing


loaded_suite.load_suite = load_suite
code = main(["eval", sys.argv[1], "--replay", "--providers", "openai", "--cassettes", sys.argv[2], "--no-progress"])
print(code, forkserver._forkserver._forkserver_pid)
"""


def test_an_eval_interrupted_before_its_runs_ends_the_warm_up_at_once(tmp_path: Path) -> None:
    """Ctrl-C (a CI cancel) during the eval's start left the fork server importing for seconds with the
    output pipes held (the early warm-up; found by a review)."""
    done = run_probe(INTERRUPTED, SUITE, REPO / "cassettes", home=tmp_path / "home")
    assert done.stdout.split()[-2:] == ["130", "None"], (done.stdout, done.stderr[-3000:])
    assert "interrupted" in done.stderr
