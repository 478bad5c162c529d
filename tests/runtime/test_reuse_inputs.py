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


def _copy(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    shutil.copytree(EXAMPLES / "support_desk", agent, ignore=shutil.ignore_patterns("__pycache__"))
    return agent


def _uses(agent: Path, statement: str, call: str) -> None:
    """Make ``search_policy`` depend on ``call`` (brought in by ``statement``)."""
    handlers = agent / "support_desk_handlers.py"
    text = handlers.read_text()
    old = '    return {"passages": hits or HANDBOOK[:1]}'
    assert old in text
    handlers.write_text(text.replace(old, f"    {statement}\n    return {{'passages': {call}}}"))


def test_a_change_in_any_project_module_a_handler_imports_changes_the_key(tmp_path: Path) -> None:
    """The helpers a handler imports, at any depth, in sub-packages, by relative import, or from a project
    folder outside the spec's (an ``src/`` layout on the path): each one's change is a new key."""
    agent = _copy(tmp_path)
    lib = agent / "lib"
    (lib / "deep").mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "passages.py").write_text(
        "from .deep import rank\n\ndef pick(hits, fallback):\n    return rank(hits) or fallback\n"
    )
    (lib / "deep" / "__init__.py").write_text("from shared.text import norm as norm\n")
    (lib / "deep" / "rank.py").write_text(
        "import yaml  # third party: counted through its version\n\ndef rank(hits):\n    return hits\n"
    )
    (lib / "deep" / "__init__.py").write_text(
        "from . import rank as _r\nfrom shared.text import norm\n\nrank = _r.rank\n"
    )
    src = tmp_path / "src" / "shared"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "text.py").write_text("def norm(s):\n    return s\n")
    _uses(agent, "from lib.passages import pick", "pick(hits, HANDBOOK[:1])")
    import sys

    sys.path.insert(0, str(tmp_path / "src"))
    try:
        task = _task(agent, tmp_path)
        key = Fingerprints().key(task)
        assert key is not None and Fingerprints().key(task) == key  # stable while nothing changes
        for changed in (
            lib / "passages.py",
            lib / "deep" / "rank.py",
            lib / "deep" / "__init__.py",
            src / "text.py",
        ):
            changed.write_text(changed.read_text() + "\n# changed\n")
            now = Fingerprints().key(task)
            assert now not in (None, key), f"a change in {changed.relative_to(tmp_path)} kept the key"
            key = now
    finally:
        sys.path.remove(str(tmp_path / "src"))


def test_modules_named_by_preconditions_reconcile_and_the_approver_are_fingerprinted(tmp_path: Path) -> None:
    import yaml

    agent = _copy(tmp_path)
    (agent / "checks").mkdir()
    (agent / "checks" / "__init__.py").write_text("")
    (agent / "checks" / "rules.py").write_text("def ok(args, context):\n    return True\n")
    (agent / "checks" / "review.py").write_text("def decide(card):\n    return 'approve'\n")
    tools = yaml.safe_load((agent / "tools.yaml").read_text())
    first = tools["tools"][0]
    first["preconditions"] = [{"name": "ok", "check": "checks.rules:ok"}]
    (agent / "tools.yaml").write_text(yaml.safe_dump(tools, sort_keys=False))
    task = _task(agent, tmp_path)
    key = Fingerprints().key(task)
    rules = agent / "checks" / "rules.py"
    rules.write_text(rules.read_text() + "\n# changed\n")
    assert Fingerprints().key(task) not in (None, key)
    by_callback = dataclasses.replace(task, approver="checks.review:decide")
    key = Fingerprints().key(by_callback)
    review = agent / "checks" / "review.py"
    review.write_text(review.read_text() + "\n# changed\n")
    assert Fingerprints().key(by_callback) not in (None, key)
    missing = dataclasses.replace(task, approver="checks.nowhere:decide")
    assert Fingerprints().key(missing) is None  # code that cannot be found: never reused
