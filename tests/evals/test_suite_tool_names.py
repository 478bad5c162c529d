"""Tool names in a suite's cases are checked against the agents under test (``load_suite``, so
``validate``, ``eval``, ``record`` and the pytest plugin alike): a misspelt name in any field that names a
tool is refused with the case, the field and the name — a misspelt ``forbidden_tools`` entry would
otherwise pass every run forever. Tools only a run lists (MCP servers, A2A agents) are not refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from portagent.contracts.errors import SpecError, SpecProblem
from portagent.evals import load_suite

TOOLS = """\
kind: tools
schema_version: 1
tools:
  - name: search_policy
    description: Search the handbook.
    effect: read
    input_schema: {type: object, properties: {query: {type: string}}}
    handler: desk_handlers:search_policy
  - name: send_email
    description: Send an email.
    effect: external_effect
    input_schema: {type: object, properties: {to: {type: string}}}
    idempotency: {required: true}
    handler: desk_handlers:send_email
"""

CASE: dict[str, Any] = {"case_id": "c1", "input": "hola", "why_it_exists": "because"}

# field → (what the case gives, with NAME where the tool name goes; the problem's field path)
FIELDS: dict[str, tuple[dict[str, Any], str]] = {
    "expect.required_tools": ({"expect": {"required_tools": ["NAME"]}}, "expect.required_tools.0"),
    "expect.forbidden_tools": ({"expect": {"forbidden_tools": ["NAME"]}}, "expect.forbidden_tools.0"),
    "expect.must_not_execute": ({"expect": {"must_not_execute": ["NAME"]}}, "expect.must_not_execute.0"),
    "expect.trajectory.reference": (
        {"expect": {"trajectory": {"mode": "strict", "reference": ["search_policy", "NAME"]}}},
        "expect.trajectory.reference.1",
    ),
    "expect.args.expected": (
        {"expect": {"args": {"mode": "subset", "expected": {"NAME": {"to": "a@example.org"}}}}},
        "expect.args.expected.NAME",
    ),
    "approvals.tool": ({"approvals": [{"tool": "NAME", "decision": "approve"}]}, "approvals.0.tool"),
}


def _named(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return {_named(k, name): _named(v, name) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, name) for v in value]
    return name if value == "NAME" else value


def agent(tmp: Path, file: str = "agent.yaml", **spec: Any) -> str:
    if not (tmp / "tools.yaml").exists():
        (tmp / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    data = {
        "kind": "agent",
        "schema_version": 1,
        "name": "desk",
        "instructions": "Help.",
        "tool_files": ["tools.yaml"],
        "tools": ["search_policy", "send_email"],
        **spec,
    }
    (tmp / file).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return file


def suite(tmp: Path, *cases: dict[str, Any], **top: Any) -> Path:
    data = {
        "kind": "suite",
        "schema_version": 1,
        "suite_id": "s",
        "dataset_version": "1",
        "owner": "me",
        **({"agent": "agent.yaml"} if "baseline" not in top else {}),
        **top,
        "cases": [{**CASE, **c} for c in cases],
    }
    p = tmp / "suite.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return p


def refused(path: Path) -> list[SpecProblem]:
    with pytest.raises(SpecError) as e:
        load_suite(path)
    return e.value.problems


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_each_field_refuses_a_misspelt_tool_and_takes_the_right_one(tmp_path: Path, field: str) -> None:
    given, where = FIELDS[field]
    agent(tmp_path)
    [problem] = refused(suite(tmp_path, _named(given, "send_emial")))
    assert problem.file == str(tmp_path / "suite.yaml")
    assert problem.path == "cases.0." + where.replace("NAME", "send_emial")
    assert problem.line is not None
    message = problem.message
    assert message.startswith(f"case 'c1': unknown tool 'send_emial' in {field} (did you mean 'send_email'?)")
    assert "no agent under test (desk@1.0.0) has a tool of that name" in message
    assert "tools: search_policy, send_email" in message

    loaded = load_suite(suite(tmp_path, _named(given, "send_email")))
    assert [c.case_id for c in loaded.cases] == ["c1"]


def test_every_bad_name_of_every_case_is_reported_at_once_with_its_line(tmp_path: Path) -> None:
    agent(tmp_path)
    (tmp_path / "cases.yaml").write_text(
        textwrap.dedent(
            """\
            - case_id: c2
              input: x
              why_it_exists: y
              expect:
                forbidden_tools: [send_email, delete_all]
            """
        ),
        encoding="utf-8",
    )
    p = suite(
        tmp_path,
        {"expect": {"must_not_execute": ["Send_Email"], "required_tools": ["search_policy"]}},
        case_files=["cases.yaml"],
    )
    problems = refused(p)
    found = {(Path(pr.file).name, pr.path, pr.line): pr.message for pr in problems}
    line = 1 + p.read_text(encoding="utf-8").splitlines().index("    - Send_Email")
    assert set(found) == {
        ("suite.yaml", "cases.0.expect.must_not_execute.0", line),
        ("cases.yaml", "0.expect.forbidden_tools.1", 5),
    }
    assert "did you mean 'send_email'" in found[("suite.yaml", "cases.0.expect.must_not_execute.0", line)]
    other = found[("cases.yaml", "0.expect.forbidden_tools.1", 5)]
    assert "case 'c2': unknown tool 'delete_all' in expect.forbidden_tools:" in other  # nothing close


def test_a_name_of_either_agent_version_is_known(tmp_path: Path) -> None:
    """Every case runs on the baseline and the candidate: a tool only one of them has is a fair name."""
    agent(tmp_path, "v1.yaml")
    agent(tmp_path, "v2.yaml", version="2.0.0", tools=["search_policy"])
    agent(tmp_path, "v3.yaml", version="3.0.0", tools=["search_policy"])
    ok = suite(
        tmp_path, {"expect": {"forbidden_tools": ["send_email"]}}, baseline="v1.yaml", candidate="v2.yaml"
    )
    assert load_suite(ok).suite.candidate == "v2.yaml"
    p = suite(
        tmp_path, {"expect": {"forbidden_tools": ["send_email"]}}, baseline="v3.yaml", candidate="v2.yaml"
    )
    [problem] = refused(p)
    assert "no agent under test (desk@3.0.0, desk@2.0.0) has a tool of that name" in problem.message
    assert "tools: search_policy)" in problem.message


def test_sub_agent_tools_count_and_a_sub_agent_name_is_not_a_tool(tmp_path: Path) -> None:
    """A delegated agent's calls are traced under its tools' names; the delegation itself is a handoff
    event (adapters' ``record_handoff``), never a ``tool.call`` named after the sub-agent."""
    (tmp_path / "extra.yaml").write_text(
        textwrap.dedent(
            """\
            kind: tool
            schema_version: 1
            name: get_payments
            description: Payments of a case.
            effect: read
            input_schema: {type: object, properties: {}}
            handler: desk_handlers:get_payments
            """
        ),
        encoding="utf-8",
    )
    agent(tmp_path, "billing.yaml", name="billing", tool_files=["extra.yaml"], tools=["get_payments"])
    agent(tmp_path, delegation=[{"agent": "billing.yaml", "kind": "agent_as_tool"}])
    ok = suite(tmp_path, {"expect": {"required_tools": ["get_payments"], "forbidden_tools": ["send_email"]}})
    assert load_suite(ok).cases[0].expect.required_tools == ["get_payments"]
    [problem] = refused(suite(tmp_path, {"expect": {"forbidden_tools": ["billing"]}}))
    assert problem.path == "cases.0.expect.forbidden_tools.0"
    assert "unknown tool 'billing' in expect.forbidden_tools" in problem.message
    assert "'billing' is an agent: a delegation is traced as a handoff event, never as a tool call" in (
        problem.message
    )
    assert "tools: get_payments, search_policy, send_email" in problem.message


def test_granted_builtin_tools_are_known(tmp_path: Path) -> None:
    agent(tmp_path, builtin_tools=["Read"])
    assert load_suite(suite(tmp_path, {"expect": {"forbidden_tools": ["Read"]}}))
    [problem] = refused(suite(tmp_path, {"expect": {"forbidden_tools": ["Reed"]}}))
    assert "unknown tool 'Reed' in expect.forbidden_tools (did you mean 'Read'?)" in problem.message


def test_mcp_tools_are_only_refused_when_they_cannot_come_from_a_server(tmp_path: Path) -> None:
    """An MCP server's tools are listed when a run starts, named ``prefix + tool`` (``McpServerRef``):
    without an allow-list any name with the prefix is accepted; with one, the names are exact."""
    server = {"name": "files", "command": ["python", "server.py"]}
    agent(tmp_path, mcp_servers=[server])
    listed_at_run_time = {
        "expect": {"forbidden_tools": ["files_delete_everything"], "required_tools": ["send_email"]}
    }
    assert load_suite(suite(tmp_path, listed_at_run_time))
    [problem] = refused(suite(tmp_path, {"expect": {"forbidden_tools": ["delete_everything"]}}))
    assert "unknown tool 'delete_everything' in expect.forbidden_tools" in problem.message
    assert "MCP server 'files': any name starting 'files_', listed only when a run starts" in problem.message

    agent(tmp_path, mcp_servers=[{**server, "allow": ["read_file", "list.dir"]}])
    assert load_suite(
        suite(tmp_path, {"expect": {"must_not_execute": ["files_read_file", "files_list_dir"]}})
    )
    [problem] = refused(suite(tmp_path, {"expect": {"must_not_execute": ["files_read_fiel"]}}))
    assert "(did you mean 'files_read_file'?)" in problem.message
    assert "MCP server 'files': files_list_dir, files_read_file" in problem.message

    agent(tmp_path, mcp_servers=[{**server, "prefix": ""}])  # unprefixed: any name may be the server's
    assert load_suite(suite(tmp_path, {"expect": {"forbidden_tools": ["delete_everything"]}}))

    agent(tmp_path, "billing.yaml", name="billing", mcp_servers=[server])  # a sub-agent's server counts
    agent(tmp_path, delegation=[{"agent": "billing.yaml"}])
    assert load_suite(suite(tmp_path, {"expect": {"forbidden_tools": ["files_rm"]}}))


def test_a2a_skills_are_only_refused_when_they_cannot_come_from_the_remote_agent(tmp_path: Path) -> None:
    remote = {"name": "travel", "url": "http://127.0.0.1:9/"}  # never contacted: nothing runs
    agent(tmp_path, a2a_agents=[remote])
    assert load_suite(suite(tmp_path, {"expect": {"forbidden_tools": ["travel_book_flight"]}}))
    [problem] = refused(suite(tmp_path, {"expect": {"forbidden_tools": ["book_flight"]}}))
    assert "A2A agent 'travel': any name starting 'travel_', listed only when a run starts" in problem.message

    agent(tmp_path, a2a_agents=[{**remote, "skills": ["book-flight"], "prefix": "t_"}])
    assert load_suite(suite(tmp_path, {"approvals": [{"tool": "t_book-flight", "decision": "reject"}]}))
    [problem] = refused(suite(tmp_path, {"approvals": [{"tool": "t_book_flight", "decision": "reject"}]}))
    assert "unknown tool 't_book_flight' in approvals.tool (did you mean 't_book-flight'?)" in problem.message


def test_validate_and_eval_refuse_a_misspelt_tool_with_one_message_and_write_nothing(tmp_path: Path) -> None:
    agent(tmp_path)
    p = suite(tmp_path, {"expect": {"forbidden_tools": ["send_emial"]}}, emulator_script="none.yaml")
    (tmp_path / "none.yaml").write_text(
        "kind: emulator-script\nschema_version: 1\nturns: []\n", encoding="utf-8"
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "portagent", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )

    done = cli("validate", str(p))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [x for x in done.stderr.splitlines() if "send_emial" in x]
    assert len(lines) == 1
    assert (
        "[cases.0.expect.forbidden_tools.0]: case 'c1': unknown tool 'send_emial' in expect.forbidden_tools "
        in (lines[0])
    )
    assert "(did you mean 'send_email'?)" in lines[0]

    for command in (
        ["eval", str(p), "--emulator", "--providers", "openai", "--out", "results"],
        ["record", str(p), "--emulator", "--providers", "openai", "--out", "cassettes"],
    ):
        done = cli(*command)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert "unknown tool 'send_emial' in expect.forbidden_tools" in done.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "cassettes").exists()


def test_an_agent_spec_that_does_not_load_is_one_problem_and_leaves_the_names_unchecked(
    tmp_path: Path,
) -> None:
    """Against the other agent alone, a name only the broken one has would look unknown: no guessing."""
    agent(tmp_path, "v1.yaml")
    (tmp_path / "v2.yaml").write_text("kind: agent\nschema_version: 1\nname: desk\n", encoding="utf-8")
    p = suite(
        tmp_path, {"expect": {"forbidden_tools": ["send_emial"]}}, baseline="v1.yaml", candidate="v2.yaml"
    )
    [problem] = refused(p)
    assert (problem.path, problem.line) == ("candidate", 7)
    assert problem.message.startswith("agent spec v2.yaml does not load (")
    assert problem.message.endswith("so the tool names the cases give are not checked")
    assert problem.causes  # the agent spec's problems, rendered after the message
    assert "[instructions]: required field is missing" in problem.render()
