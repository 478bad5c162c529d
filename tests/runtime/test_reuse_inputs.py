"""What ``eval --reuse`` fingerprints (runtime/reuse.py): every input that decides a replayed run changes its
key, and an input that cannot be read makes the run "never reused" instead of failing the eval."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from _support import EXAMPLES, REPO, require_path

from portagent.contracts.loaded_suite import load_suite
from portagent.contracts.suite import ThreadTurn
from portagent.runtime.eval_plan import plan_runs
from portagent.runtime.reuse import Fingerprints


def _task(agent_dir: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    loaded = load_suite(agent_dir / "suite.yaml")
    tasks = plan_runs(
        loaded, mode="replay", providers=["openai"], cassettes=REPO / "cassettes", case_ids=["refund-rule"]
    )
    return dataclasses.replace(tasks[0], out_dir=tmp_path / "out" / "r0")


def test_the_cases_thread_is_part_of_the_key(tmp_path: Path) -> None:
    task = _task(EXAMPLES / "support_desk", tmp_path)
    before = Fingerprints().key(task)
    thread = [ThreadTurn(role="user", content="earlier"), ThreadTurn(role="assistant", content="noted")]
    longer = dataclasses.replace(task, case=task.case.model_copy(update={"thread": thread}))
    assert before is not None and Fingerprints().key(longer) not in (None, before)


def test_a_dangling_link_beside_the_agent_is_not_a_source_file(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    shutil.copytree(EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("__pycache__"))
    task = _task(agent, tmp_path)
    assert Fingerprints().key(task) is not None
    (agent / ".#support_desk_handlers.py").symlink_to(agent / "gone.py")  # an editor's lock link
    assert Fingerprints().key(task) is not None  # a dangling link is not a source file
