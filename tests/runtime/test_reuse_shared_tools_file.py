"""``eval --reuse`` fingerprints the handler modules a run would call (runtime/reuse.py), looked for where
the run looks for them: a tools file shared by several agents (``tool_files: [../shared/tools.yaml]``)
keeps its handler module beside it, and a change there must make the run again.

Before, handler modules were looked for beside the agent spec only: a shared folder's module was not
found (the run was never reused), or a stale copy beside the spec was fingerprinted instead (an edit of
the shared module the run calls kept the old key, and ``--reuse`` kept a stale result)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from _support import EXAMPLES, REPO, require_path

from portagent.contracts.loaded_suite import load_suite
from portagent.runtime.eval_plan import plan_runs
from portagent.runtime.reuse import Fingerprints

HANDLERS = "support_desk_handlers.py"


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    """The support-desk example with its tools file and handler module moved to ``../shared``."""
    agent, shared = tmp_path / "agent", tmp_path / "shared"
    shutil.copytree(EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("__pycache__"))
    shared.mkdir()
    for name in ("tools.yaml", HANDLERS):
        (agent / name).rename(shared / name)
    for spec in ("agent.yaml", "agent_v2.yaml", "billing_specialist.yaml"):
        path = agent / spec
        text = path.read_text()
        assert "tool_files: [tools.yaml]" in text
        path.write_text(text.replace("tool_files: [tools.yaml]", "tool_files: [../shared/tools.yaml]"))
    return agent, shared


def _task(agent: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    require_path(REPO / "cassettes" / "support-desk", "the demo's committed cassettes")
    loaded = load_suite(agent / "suite.yaml")
    tasks = plan_runs(
        loaded, mode="replay", providers=["openai"], cassettes=REPO / "cassettes", case_ids=["refund-rule"]
    )
    return dataclasses.replace(tasks[0], out_dir=tmp_path / "out" / "r0")


def test_an_edit_of_the_shared_handler_module_changes_the_key(tmp_path: Path) -> None:
    agent, shared = _layout(tmp_path)
    task = _task(agent, tmp_path)
    key = Fingerprints().key(task)
    assert key is not None  # before: None — the module was not found, the run never reused
    assert Fingerprints().key(task) == key  # nothing changed: the run is reused
    handlers = shared / HANDLERS
    handlers.write_text(handlers.read_text() + "\n# changed\n")
    changed = Fingerprints().key(task)
    assert changed not in (None, key)
    (shared / "helpers_of_shared.py").write_text("X = 1\n")  # a .py beside the shared module counts too
    assert Fingerprints().key(task) not in (None, changed)


def test_a_stale_copy_beside_the_spec_does_not_stand_for_the_shared_module(tmp_path: Path) -> None:
    """The run calls the shared folder's module (the tool's own folder is looked in first), so that is the
    one fingerprinted; the copy left beside the spec is no handler of this run."""
    agent, shared = _layout(tmp_path)
    shutil.copy(shared / HANDLERS, agent / HANDLERS)
    task = _task(agent, tmp_path)
    key = Fingerprints().key(task)
    assert key is not None
    handlers = shared / HANDLERS
    handlers.write_text(handlers.read_text() + "\n# changed\n")
    assert Fingerprints().key(task) not in (None, key)  # before: the same key, a stale run reused


def test_the_key_of_the_usual_layout_is_unchanged_by_where_the_project_lies(tmp_path: Path) -> None:
    """Keys name the shared folder relative to the agent's, so a moved or cloned project keeps them."""
    keys = []
    for where in ("one", "two/deeper"):
        agent, _ = _layout(tmp_path / where)
        keys.append(Fingerprints().parts(_task(agent, tmp_path / where)))
    assert keys[0] is not None and keys[1] is not None
    assert keys[0]["handlers"] == keys[1]["handlers"]
    assert f"../shared:{HANDLERS.removesuffix('.py')}" in keys[0]["handlers"]
