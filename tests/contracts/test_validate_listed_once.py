"""`portagent validate` of files that depend on each other lists each problem in full once.

An agent spec lists the problems of the tools file it loads, and a suite the first problem of an agent spec
that does not load. Checked together (a folder), one misspelt type in a tools file was five copies of one
message: under the tools file, under each agent using it, and under the suite for each of its agents. Now
the problem is written in full once; the others say where it is. Checked alone, each file still says it
all (nothing else lists it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES, run_cli

TYPE_AT = "[tools.0.input_schema.properties.query.type]"
CAUSE = "malformed JSON Schema: 'strng' is not one of ['array', 'boolean'"


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """The support desk with a misspelt type in its first tool."""
    folder = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", folder, ignore=shutil.ignore_patterns("__pycache__"))
    tools = folder / "tools.yaml"
    text = tools.read_text(encoding="utf-8")
    bad = text.replace("query: {type: string, minLength: 2", "query: {type: strng, minLength: 2", 1)
    assert bad != text
    tools.write_text(bad, encoding="utf-8")
    return folder


def sections(err: str) -> dict[str, list[str]]:
    """``invalid  FILE`` → the problem lines under it."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in err.splitlines():
        if line.startswith("invalid  "):
            current = out.setdefault(line.removeprefix("invalid  "), [])
        elif line.startswith("  - "):
            current.append(line.removeprefix("  - "))
    return out


def test_a_folder_lists_a_tools_file_problem_once(desk: Path) -> None:
    code, out, err = run_cli("validate", str(desk))
    assert code == 1, out + err
    assert "Traceback" not in err
    assert err.count(CAUSE) == 1, err
    got = sections(err)
    tools = str(desk / "tools.yaml")
    assert len(got[tools]) == 1 and got[tools][0].startswith(f"{tools} {TYPE_AT}: {CAUSE}"), err
    for agent in ("agent.yaml", "agent_v2.yaml"):  # each agent says why it is invalid, and where
        assert got[str(desk / agent)] == [f"{tools}: 1 problem, listed under that file"], err
    suite = got[str(desk / "suite.yaml")]
    assert len(suite) == 2, err
    for role, agent in (("baseline", "agent.yaml"), ("candidate", "agent_v2.yaml")):
        [line] = [s for s in suite if f"[{role}]" in s]
        assert f"agent spec {agent} does not load (1 problem)" in line, line
        assert line.endswith(f"(see {tools} {TYPE_AT})"), line
    assert "4 of 8 spec files valid" in err


def test_two_problems_in_the_tools_file_are_one_line_under_each_agent(desk: Path) -> None:
    tools = desk / "tools.yaml"
    text = tools.read_text(encoding="utf-8")
    tools.write_text(text.replace("required: [case_id]", "required: case_id", 1), encoding="utf-8")
    code, out, err = run_cli("validate", str(desk))
    assert code == 1, out + err
    got = sections(err)
    assert len(got[str(tools)]) == 2, err
    assert got[str(desk / "agent.yaml")] == [f"{tools}: 2 problems, listed under that file"], err
    [baseline] = [s for s in got[str(desk / "suite.yaml")] if "[baseline]" in s]
    assert "does not load (2 problems)" in baseline and baseline.endswith(
        f"(see {tools} {TYPE_AT} and 1 more)"
    )


def test_an_agent_checked_alone_still_says_it_all(desk: Path) -> None:
    code, out, err = run_cli("validate", str(desk / "agent.yaml"))
    assert code == 1, out + err
    [line] = sections(err)[str(desk / "agent.yaml")]
    assert line.startswith(f"{desk / 'tools.yaml'} {TYPE_AT}: tool 'search_policy': {CAUSE}"), err


def test_a_suite_checked_alone_shows_a_shared_cause_once(desk: Path) -> None:
    """Both agents load the broken tools file: the first role's line carries the cause, the second points
    at it. With an agent spec checked beside it, the agent's listing carries it and both roles point."""
    code, out, err = run_cli("validate", str(desk / "suite.yaml"))
    assert code == 1, out + err
    assert err.count(CAUSE) == 1, err
    baseline, candidate = sections(err)[str(desk / "suite.yaml")]
    assert "[baseline]" in baseline and f"not checked: {desk / 'tools.yaml'} {TYPE_AT}" in baseline
    assert "[candidate]" in candidate and candidate.endswith(f"(see {desk / 'tools.yaml'} {TYPE_AT})")

    code, out, err = run_cli("validate", str(desk / "agent.yaml"), str(desk / "suite.yaml"))
    assert code == 1, out + err
    assert err.count(CAUSE) == 1, err
    assert sections(err)[str(desk / "agent.yaml")][0].startswith(f"{desk / 'tools.yaml'} {TYPE_AT}: tool")
    assert all(
        s.endswith(f"(see {desk / 'tools.yaml'} {TYPE_AT})") for s in sections(err)[str(desk / "suite.yaml")]
    )


def test_the_pointer_names_the_file_as_its_own_listing_does(desk: Path) -> None:
    """The tools file given by another name (a link): the agent's line names the listing that holds it."""
    link = desk / "tl.yaml"
    link.symlink_to(desk / "tools.yaml")
    code, out, err = run_cli("validate", str(desk / "agent.yaml"), str(link))
    assert code == 1, out + err
    got = sections(err)
    assert got[str(desk / "agent.yaml")] == [f"{link}: 1 problem, listed under that file"], err
    assert got[str(link)][0].startswith(f"{link} {TYPE_AT}: {CAUSE}"), err


def test_a_suite_checked_alone_shows_every_problem_of_an_agent_that_does_not_load(desk: Path) -> None:
    """The agent spec's own problems and its tools file's: each shown under the suite's line, none left
    out (the line used to carry the first and "(and N more)")."""
    policy = desk / "policy_v2.yaml"
    policy.write_text(policy.read_text(encoding="utf-8").replace("decision: allow", "decision: alow", 1))
    code, out, err = run_cli("validate", str(desk / "suite.yaml"))
    assert code == 1, out + err
    assert "alow" in err and err.count(CAUSE) == 1, err
    [candidate] = [s for s in sections(err)[str(desk / "suite.yaml")] if "[candidate]" in s]
    assert "agent spec agent_v2.yaml does not load (2 problems)" in candidate, err


def test_a_suite_whose_emulator_script_does_not_load_is_invalid(tmp_path: Path) -> None:
    """``validate`` of the suite said ok for a script ``eval --emulator`` refuses."""
    desk = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", desk, ignore=shutil.ignore_patterns("__pycache__"))
    script = desk / "emulator.yaml"
    script.write_text(script.read_text(encoding="utf-8").replace("conversations:", "conversatons:", 1))
    code, out, err = run_cli("validate", str(desk / "suite.yaml"))
    assert code == 1, out + err
    [line] = [s for s in err.splitlines() if "emulator script" in s]
    assert f"{desk / 'suite.yaml'} [emulator_script]: emulator script {script} does not load" in line, err
    assert "so no case can run on the emulator" in err and "unknown field 'conversatons'" in err, err


def test_a_tools_file_named_twice_is_the_agents_mistake_not_the_files(tmp_path: Path) -> None:
    """``tool_files: [tools.yaml, ./tools.yaml]`` made every tool a "duplicate tool name" blamed on
    tools.yaml, five times — a file with no duplicate."""
    desk = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", desk, ignore=shutil.ignore_patterns("__pycache__"))
    agent = desk / "agent.yaml"
    text = agent.read_text(encoding="utf-8")
    agent.write_text(text.replace("tool_files: [tools.yaml]", "tool_files: [tools.yaml, ./tools.yaml]", 1))
    code, out, err = run_cli("validate", str(agent))
    assert code == 1, out + err
    assert sections(err)[str(agent)] == [
        f"{agent} [tool_files.1]: ./tools.yaml is listed twice: it is the file tool_files.0 names (tools.yaml)"
    ]

    # two files defining the same tools: one problem, in the agent, naming both files and the tools
    shutil.copy(desk / "tools.yaml", desk / "more.yaml")
    agent.write_text(text.replace("tool_files: [tools.yaml]", "tool_files: [tools.yaml, more.yaml]", 1))
    code, out, err = run_cli("validate", str(agent))
    assert code == 1, out + err
    [line] = sections(err)[str(agent)]
    assert line.startswith(
        f"{agent} [tool_files.1]: more.yaml defines tools 'search_policy', 'get_student_record'"
    )
    assert "which" in line and "tools.yaml defines too" in line


def test_a_judges_emulator_script_that_does_not_load_is_the_suites_problem(tmp_path: Path) -> None:
    """A grader's own script was never loaded by ``validate``: "ok" for a script ``eval --judges`` refuses."""
    desk = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", desk, ignore=shutil.ignore_patterns("__pycache__"))
    (desk / "bad_judge.yaml").write_text(
        "kind: emulator-script\nschema_version: 1\nname: judge\nconversation: []\n", encoding="utf-8"
    )
    with (desk / "suite.yaml").open("a", encoding="utf-8") as f:
        f.write(
            "\ngraders:\n  - name: tone\n    type: judge\n    judge: agent.yaml\n"
            "    instructions: Is it polite?\n    emulator_script: bad_judge.yaml\n"
        )
    code, out, err = run_cli("validate", str(desk / "suite.yaml"))
    assert code == 1, out + err
    assert (
        f"[graders.0.emulator_script]: judge emulator script {desk / 'bad_judge.yaml'} does not load (2 problems)"
        in err
    )
    assert "unknown field 'conversation'" in err, err


def test_an_inline_judges_emulator_script_is_loaded_too(tmp_path: Path) -> None:
    desk = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", desk, ignore=shutil.ignore_patterns("__pycache__"))
    (desk / "bad_judge.yaml").write_text(
        "kind: emulator-script\nschema_version: 1\nname: judge\nconversation: []\n", encoding="utf-8"
    )
    suite = desk / "suite.yaml"
    text = suite.read_text(encoding="utf-8")
    inline = (
        '      final_must_contain: ["30 days", "H-1"]\n'
        "      graders:\n        - {name: tone, type: judge, judge: agent.yaml, instructions: Polite?, emulator_script: bad_judge.yaml}\n"
    )
    changed = text.replace('      final_must_contain: ["30 days", "H-1"]\n', inline, 1)
    assert changed != text
    suite.write_text(changed, encoding="utf-8")
    code, out, err = run_cli("validate", str(suite))
    assert code == 1, out + err
    assert "[case refund-rule: expect.graders.0.emulator_script]: judge emulator script" in err, err
