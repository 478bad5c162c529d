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


def _agent(path: Path, extra: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "kind: agent\nschema_version: 1\nname: " + path.stem + "\ninstructionz: hi\n"
        "models: {openai: gpt-4.1-mini}\n" + extra,
        encoding="utf-8",
    )


def test_a_name_the_system_cannot_look_up_is_no_file_not_a_crash(tmp_path: Path) -> None:
    """A 5 000-character name made ``is_file`` raise (ENAMETOOLONG): the agent's own problems were lost to
    "[Errno 36] File name too long", for a broken spec and a valid one alike."""
    long = "a" * 5000
    _agent(
        tmp_path / "broken.yaml",
        f'tool_files: ["{long}.yaml"]\npolicy: "{long}"\n'
        f'delegation: [{{agent: "{long}", kind: handoff, description: d}}]\n',
    )
    with pytest.raises(SpecError) as caught:
        load_agent(tmp_path / "broken.yaml")
    assert _where(caught.value.problems) == {("broken.yaml", "instructions"), ("broken.yaml", "instructionz")}
    valid = (tmp_path / "broken.yaml").read_text(encoding="utf-8").replace("instructionz", "instructions")
    (tmp_path / "valid.yaml").write_text(valid.replace("name: broken", "name: valid"), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_agent(tmp_path / "valid.yaml")
    assert {(p.path, p.message[:16]) for p in caught.value.problems} == {
        ("tool_files.0", "file not found: "),
        ("policy", "file not found: "),
        ("delegation.0.agent", "file not found: "),
    }


def test_one_file_reached_by_two_spellings_is_reported_once(tmp_path: Path) -> None:
    """``../agents/s.yaml`` from ``agents/s.yaml`` is ``s.yaml`` itself; ``sub/../tools.yaml`` is ``tools.yaml``."""
    _agent(
        tmp_path / "agents" / "s.yaml",
        "delegation: [{agent: ../agents/s.yaml, kind: handoff, description: d}]\n",
    )
    (tmp_path / "agents" / "tools.yaml").write_text(
        (EXAMPLES / "support_desk" / "tools.yaml")
        .read_text(encoding="utf-8")
        .replace("query: {type: string, minLength: 2", "query: {type: strng, minLength: 2", 1),
        encoding="utf-8",
    )
    (tmp_path / "agents" / "sub").mkdir()
    _agent(tmp_path / "agents" / "t.yaml", "tool_files: [tools.yaml, sub/../tools.yaml]\n")
    for name, expected in (("s.yaml", 2), ("t.yaml", 3)):
        with pytest.raises(SpecError) as caught:
            load_agent(tmp_path / "agents" / name)
        found = [(Path(p.file).resolve(), p.path) for p in caught.value.problems]
        assert len(found) == len(set(found)) == expected, found
