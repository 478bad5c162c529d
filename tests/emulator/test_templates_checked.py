"""Emulator-script templates (issue 15, item 7): a template that cannot resolve is refused when the
script loads, with the field path; one that resolves to nothing against a request makes the emulator
answer an error — a real SDK run then fails naming it — never the literal ``{{…}}`` as the answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import EXAMPLES, run_cli

from portagent.contracts.emulator_script import template_spans
from portagent.contracts.errors import SpecError
from portagent.emulator import load_script

AGENT = EXAMPLES / "support_desk" / "agent.yaml"


def _script(tmp_path: Path, turns: str) -> Path:
    p = tmp_path / "script.yaml"
    p.write_text(
        "kind: emulator-script\nschema_version: 1\nconversations:\n"
        "  - name: c\n    match: {first_user: q}\n    turns:\n" + turns,
        encoding="utf-8",
    )
    return p


@pytest.mark.parametrize(
    ("turns", "path", "words"),
    [
        (
            '      - text: "x {{last_result.id}}"\n',
            "conversations.0.turns.0.text",
            "unknown variable 'last_result'",
        ),
        ('      - text: "x {{last_tool_result.id"\n', "conversations.0.turns.0.text", "unclosed"),
        ('      - text: "x {last_tool_result.id}}"\n', "conversations.0.turns.0.text", "two braces"),
        (
            '      - text: "x {{last_tool_result..id}}"\n',
            "conversations.0.turns.0.text",
            "neither a variable path",
        ),
        ('      - text: "x {{first_user.name}}"\n', "conversations.0.turns.0.text", "first_user is text"),
        ('      - text: "x {{tool_results.first}}"\n', "conversations.0.turns.0.text", "takes an index"),
        (
            "      - text: 'x {{\"a\" | last_tool_result}}'\n",
            "conversations.0.turns.0.text",
            "last alternative",
        ),
        ('      - text: "x {{ }}"\n', "conversations.0.turns.0.text", "empty alternative"),
        (
            "      - tool_calls: [{name: f, arguments: {a: {b: ['{{nope}}']}}}]\n",
            "conversations.0.turns.0.tool_calls.0.arguments",
            "a.b.0: {{nope}}: unknown variable 'nope'",
        ),
    ],
)
def test_a_bad_template_is_refused_at_load_with_the_field_path(tmp_path, turns, path, words):
    with pytest.raises(SpecError) as info:
        load_script(_script(tmp_path, turns))
    message = str(info.value)
    assert path in message and words in message, message


def test_validate_command_refuses_it_with_one_message(tmp_path):
    bad = _script(tmp_path, '      - text: "x {{last_tool_result.id"\n')
    code, out, err = run_cli("validate", str(bad))
    assert code != 0 and "unclosed" in out + err and "Traceback" not in out + err


def test_good_templates_parse_with_alternatives():
    spans = template_spans(
        'a {{ last_tool_result.error | last_tool_result.status | "sent" }} b {{first_user}}'
    )
    assert [alts for _, _, alts in spans] == [
        [("path", ["last_tool_result", "error"]), ("path", ["last_tool_result", "status"]), ("text", "sent")],
        [("path", ["first_user"])],
    ]
    assert template_spans('JSON text {"a": {"b": 1}} is no template') == []


def test_every_shipped_script_loads():
    for p in sorted(EXAMPLES.rglob("*.yaml")):
        if b"kind: emulator-script" in p.read_bytes():
            load_script(p)


def test_an_unresolvable_template_at_run_time_fails_the_run_instead_of_leaking(tmp_path):
    """The tool result has no ``missing`` key: the real openai-agents SDK gets a 400 from the emulator,
    the run fails with the emulator's message, and no ``{{`` reaches the final answer or the trace's
    model output."""
    script = _script(
        tmp_path,
        "      - tool_calls: [{name: search_policy, arguments: {query: refund deadline}}]\n"
        '      - text: "Answer: {{last_tool_result.missing}}"\n',
    )
    out = tmp_path / "run"
    code, stdout, err = run_cli(
        "run", str(AGENT), "--provider", "openai", "--input", "q", "--emulator", str(script), "--out", str(out),
    )  # fmt: skip
    assert code == 3 and "Traceback" not in err
    assert "template {{last_tool_result.missing}} did not resolve" in stdout
    assert "without 'missing'" in stdout
    events = [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines()]
    done = events[-1]
    assert done["type"] == "run.completed" and done["status"] == "failed" and done["final_output"] is None
