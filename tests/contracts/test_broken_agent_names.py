"""An agent spec that does not load still names its tools files, its policy and its sub-agents: what is wrong
with each of them is reported with its own fault, not once the spec's own fields are fixed.

Before, one misspelt field of the agent (``budgett:``) hid every problem of the files it names: pydantic
stopped at the agent, so ``validate agent.yaml`` (and ``run``, ``eval``) said one thing, and the tools
file's misspelt schema type and the policy's misspelt field came one fix at a time.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES, run_cli

from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import SpecError


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """The support desk with a fault in the agent spec, its tools file and its policy."""
    folder = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", folder, ignore=shutil.ignore_patterns("__pycache__"))
    _edit(folder / "agent.yaml", "budget:\n", "budgett:\n")
    _edit(folder / "tools.yaml", "query: {type: string, minLength: 2", "query: {type: strng, minLength: 2")
    _edit(folder / "policy.yaml", "    decision: deny\n", "    decison: deny\n")
    return folder


def _where(problems: list) -> set[tuple[str, str]]:
    return {(Path(p.file).name, p.path) for p in problems}


def test_loading_the_agent_reports_the_faults_of_every_file_it_names(desk: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_agent(desk / "agent.yaml")
    assert _where(caught.value.problems) == {
        ("agent.yaml", "budgett"),
        ("tools.yaml", "tools.0.input_schema.properties.query.type"),
        ("policy.yaml", "rules.0.decison"),
    }


def test_validate_of_the_agent_alone_lists_them_all(desk: Path) -> None:
    code, out, err = run_cli("validate", str(desk / "agent.yaml"))
    text = out + err
    assert code == 1
    assert "[budgett]: unknown field 'budgett'" in text
    assert "[tools.0.input_schema.properties.query.type]" in text and "'strng' is not one of" in text
    assert "[rules.0.decison]: unknown field 'decison'" in text
    assert "Traceback" not in text


def test_validate_of_the_folder_lists_each_in_full_once(desk: Path) -> None:
    code, out, err = run_cli("validate", str(desk))
    text = out + err
    assert code == 1
    assert text.count("unknown field 'decison'") == 1
    assert text.count("'strng' is not one of") == 1
    agent_part = text.split(f"invalid  {desk / 'agent.yaml'}\n", 1)[1].split("\ninvalid ", 1)[0]
    assert f"{desk / 'tools.yaml'}: 1 problem, listed under that file" in agent_part
    assert f"{desk / 'policy.yaml'}: 1 problem, listed under that file" in agent_part


def test_a_broken_sub_agent_of_a_broken_agent_is_reported_too(desk: Path) -> None:
    _edit(desk / "billing_specialist.yaml", "budget:\n", "budgit:\n")
    with pytest.raises(SpecError) as caught:
        load_agent(desk / "agent.yaml")
    assert ("billing_specialist.yaml", "budgit") in _where(caught.value.problems)


def test_broken_agents_naming_each_other_are_each_reported_once(desk: Path) -> None:
    """A delegation loop through specs that do not load ends (each spec is read once)."""
    _edit(desk / "billing_specialist.yaml", "budget:\n", "budgit:\n")
    text = (desk / "billing_specialist.yaml").read_text(encoding="utf-8")
    (desk / "billing_specialist.yaml").write_text(
        text + "delegation:\n  - agent: agent.yaml\n    kind: handoff\n    description: back\n",
        encoding="utf-8",
    )
    with pytest.raises(SpecError) as caught:
        load_agent(desk / "agent.yaml")
    found = [(Path(p.file).name, p.path) for p in caught.value.problems]
    assert found.count(("agent.yaml", "budgett")) == 1
    assert found.count(("billing_specialist.yaml", "budgit")) == 1


def test_names_that_are_not_plain_strings_are_left_to_the_agents_own_problems(tmp_path: Path) -> None:
    """``tool_files: [5]`` or ``policy: {…}`` is the agent's own fault; nothing else is read."""
    folder = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", folder, ignore=shutil.ignore_patterns("__pycache__"))
    _edit(
        folder / "agent.yaml", "tool_files: [tools.yaml]", "tool_files: [5, {a: 1}, tools.yaml, missing.yaml]"
    )
    with pytest.raises(SpecError) as caught:
        load_agent(folder / "agent.yaml")
    assert {Path(p.file).name for p in caught.value.problems} == {"agent.yaml"}
