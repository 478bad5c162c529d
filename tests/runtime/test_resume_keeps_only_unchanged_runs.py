"""``eval --resume`` keeps a run an interrupted eval finished only while what decides that run is the same:
the agent spec, its policy and tools, the case's request, and (from the inputs hash a finished run leaves)
handler code and the approver. A case edited in between must be run again, never kept as a stale pass."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES, REPO, require_path

from portagent.contracts.loaded_suite import load_suite
from portagent.runtime.eval_plan import plan_runs
from portagent.runtime.eval_pool import run_tasks


def _tasks(agent: Path, out: Path):  # type: ignore[no-untyped-def]
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    loaded = load_suite(agent / "suite.yaml")
    return plan_runs(
        loaded,
        mode="replay",
        providers=["openai"],
        cassettes=REPO / "cassettes",
        results=out,
        case_ids=["refund-rule"],
    )


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    folder = tmp_path / "agent"
    shutil.copytree(EXAMPLES / "support_desk", folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_unchanged_runs_are_kept(agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_tasks(_tasks(agent, out), in_process=True)
    assert len(first.outcomes) == 4  # two agent versions, two repeats
    again = run_tasks(_tasks(agent, out), in_process=True, resume=True)
    assert again.reused == 4


def test_an_edited_case_input_is_run_again(agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_tasks(_tasks(agent, out), in_process=True)
    edit = {"input": "Something else entirely."}
    edited = [dataclasses.replace(t, case=t.case.model_copy(update=edit)) for t in _tasks(agent, out)]
    again = run_tasks(edited, in_process=True, resume=True)
    assert again.reused == 0
    assert not any(o.score.passed for o in again.outcomes)  # the edited request no longer matches


def test_a_changed_policy_or_handler_is_run_again(agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_tasks(_tasks(agent, out), in_process=True)
    policy = agent / "policy.yaml"
    policy.write_text(policy.read_text().replace("every email is reviewed", "each email is reviewed"))
    assert run_tasks(_tasks(agent, out), in_process=True, resume=True).reused == 2  # v2 has its own policy
    handlers = agent / "support_desk_handlers.py"
    handlers.write_text(handlers.read_text() + "\n# edited\n")
    assert run_tasks(_tasks(agent, out), in_process=True, resume=True).reused == 0
    assert run_tasks(_tasks(agent, out), in_process=True, resume=True).reused == 4  # now unchanged
