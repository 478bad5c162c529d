"""The demo's serial start: it loads the suite once and plans its runs once, and the eval takes that plan
(the demo used to load the suite twice and plan every run twice — in one plan per default provider to see
which are recorded, then again in the eval). Its verdict and its note on a provider left out are unchanged.

Run in-process on a trimmed copy of the demo suite (three cases, openai and claude, claude's cassettes
partly there) replayed from the committed cassettes: the spies count portagent's own loader and planner.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import EXAMPLES, REPO, portagent_home, require_path, run_cli

CASSETTES = REPO / "cassettes" / "support-desk"
KEPT = ("refund-rule", "email-reviewed", "email-outside-denied")


def _trimmed(tmp: Path) -> tuple[Path, Path]:
    """A copy of the demo suite with KEPT cases on openai and claude, and a cassette root holding every
    openai recording of them but claude's of refund-rule only."""
    folder = tmp / "examples" / "support_desk"
    folder.mkdir(parents=True)
    for f in (EXAMPLES / "support_desk").iterdir():
        if f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    suite["cases"] = [c for c in suite["cases"] if c["case_id"] in KEPT]
    suite["providers"] = ["openai", "claude"]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    root = tmp / "cassettes"
    for agent in CASSETTES.iterdir():
        for case in KEPT:
            for provider in ("openai", "claude"):
                if provider == "claude" and case != "refund-rule":
                    continue
                link = root / "support-desk" / agent.name / case / provider
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(agent / case / provider, target_is_directory=True)
    return folder / "suite.yaml", root


@pytest.mark.slow  # replays 12 runs in worker processes
def test_the_demo_loads_the_suite_once_and_plans_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_path(CASSETTES, "the demo's committed cassettes")
    import portagent.contracts.loaded_suite as loaded_suite
    import portagent.runtime.eval_plan as eval_plan
    import portagent.runtime.eval_run as eval_run

    suite, cassettes = _trimmed(tmp_path)
    calls: dict[str, int] = {"load_suite": 0, "plan_runs": 0}

    def spy(name: str, real: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return counted

    monkeypatch.setattr(loaded_suite, "load_suite", spy("load_suite", loaded_suite.load_suite))
    planner = spy("plan_runs", eval_plan.plan_runs)
    monkeypatch.setattr(eval_plan, "plan_runs", planner)
    monkeypatch.setattr(eval_run, "plan_runs", planner)  # imported by name there
    out = tmp_path / "demo-out"
    with portagent_home(tmp_path / "home"):
        code, stdout, stderr = run_cli(
            "demo", "--suite", str(suite), "--cassettes", str(cassettes), "--out", str(out), "--workers", "1"
        )
    assert code == 0, stdout + stderr
    assert calls == {"load_suite": 1, "plan_runs": 1}, calls
    # the console wraps (and folds a long temporary path) at its width: compared without whitespace
    said = "".join(stdout.split())
    note = f"note: claude left out of the demo: 8 of 12 cassettes missing under {cassettes}"
    assert "".join(note.split()) in said
    assert "onopenai,replayedoffline" in said and "Asexpected:" in said
    assert "12 runs" in stderr  # only openai's, numbered as the eval plans them
    from portagent.evals.report import load_results

    runs = load_results(out).result.runs
    assert len(runs) == 12 and {r.provenance.provider for r in runs} == {"openai"}
    assert {r.provenance.case_id for r in runs} == set(KEPT)


REFUSED = textwrap.dedent(
    """
    import sys
    from multiprocessing import forkserver
    from portagent.cli import main

    code = main(sys.argv[1:])
    print("exit", code, "fork server", forkserver._forkserver._forkserver_pid is not None)
    """
)


@pytest.mark.slow  # a fresh interpreter
def test_a_demo_refused_after_the_warm_up_started_ends_it(tmp_path: Path) -> None:
    """The demo starts its workers' fork server before it loads the suite (the warm-up overlaps the loading
    and planning); a demo refused after that — here for a --out folder that is not a results folder — ends
    the server at once: it holds the output pipes until its imports are done, so a caller reading the
    refusal through a pipe would wait for them."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    done = subprocess.run(
        [sys.executable, "-c", REFUSED, "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.stdout.strip().splitlines()[-1] == "exit 2 fork server False", (done.stdout, done.stderr)
    assert "not a portagent results folder" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
