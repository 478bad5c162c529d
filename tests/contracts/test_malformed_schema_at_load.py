"""A schema that is not itself a valid JSON Schema — a tool's input or output schema, an agent's output
schema — is refused when the agent loads, by every command that runs it, as ``validate`` refuses it.

``portagent run`` used to start the run: every call of the tool failed inside the gateway, the model
(here the emulator's script) got an error object instead of the tool's result, and the run ended as an
HTTP 400 provider error (exit 3) — a message about the emulator's template, nothing about the schema.
"""

from __future__ import annotations

import datetime
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import EXAMPLES, run_cli

from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import SpecError


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"p": schema}}
    return schema


MALFORMED = {
    "type-misspelt": (
        {"type": "object", "properties": {"query": {"type": "strng"}}},
        "properties.query.type",
    ),
    "bound-not-a-number": (
        {"type": "object", "properties": {"query": {"minLength": "two"}}},
        "properties.query.minLength",
    ),
    "required-not-a-list": ({"type": "object", "properties": {"query": {}}, "required": "query"}, "required"),
    "ref-to-nowhere": ({"type": "object", "properties": {"query": {"$ref": "#/$defs/missing"}}}, ""),
    # no value can be checked against these: validate printed a RecursionError traceback (while checking
    # the tool's examples), and a run failed every call ("the schema cannot be evaluated")
    "ref-to-itself": (
        {"type": "object", "properties": {"query": {"$ref": "#/properties/query"}}},
        "properties.query.$ref",
    ),
    "ref-loop-through-allOf": (
        {
            "type": "object",
            "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}},
            "properties": {"query": {"$ref": "#/$defs/a"}},
        },
        "$defs.a.allOf.0.$ref",
    ),
    "nested-past-the-limit": (_nested(70), "properties.p.properties.p"),  # a RecursionError traceback too
    # passed the metaschema; sending the tool to the provider failed (exit 3)
    "nan-bound": (
        {"type": "object", "properties": {"n": {"type": "number", "maximum": math.nan}}},
        "properties.n.maximum",
    ),
    "yaml-date": (
        {"type": "object", "properties": {"query": {"type": "string", "default": datetime.date(2024, 1, 1)}}},
        "properties.query.default",
    ),
}


def _desk(tmp_path: Path, schema: dict[str, Any]) -> Path:
    """The support desk example with ``search_policy``'s input schema replaced."""
    desk = tmp_path / "desk"
    shutil.copytree(EXAMPLES / "support_desk", desk, ignore=shutil.ignore_patterns("__pycache__"))
    tools = yaml.safe_load((desk / "tools.yaml").read_text())
    assert tools["tools"][0]["name"] == "search_policy"
    tools["tools"][0]["input_schema"] = schema
    tools["tools"][0].pop("examples", None)
    (desk / "tools.yaml").write_text(yaml.safe_dump(tools, sort_keys=False))
    return desk


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_tool_schema_stops_run_before_anything_runs(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema, at = MALFORMED[name]
    desk = _desk(tmp_path, schema)
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        *("run", str(desk / "agent.yaml"), "--provider", "openai", "--emulator", str(desk / "emulator.yaml")),
        *("--input", "What is the refund deadline?", "--out", str(out)),
    )
    assert code == 1, stdout + err
    path = ".".join(p for p in ("tools.0.input_schema", at) if p)
    assert f"tools.yaml [{path}" in err and "tool 'search_policy': malformed JSON Schema" in err, err
    assert "Traceback" not in err and stdout == ""
    assert not out.exists()
    code, said, err = run_cli("validate", str(desk / "tools.yaml"))  # validate says the same
    assert code != 0 and "malformed JSON Schema" in said + err


@pytest.mark.parametrize("command", ["eval", "record"])
def test_eval_and_record_refuse_it_before_any_run(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    desk = _desk(tmp_path, MALFORMED["type-misspelt"][0])
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    code, _, err = run_cli(
        command,
        str(desk / "suite.yaml"),
        "--emulator",
        "--providers",
        "openai",
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 1 and "tool 'search_policy': malformed JSON Schema" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_inline_tool_and_agent_output_schemas_are_checked_too(tmp_path: Path) -> None:
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": "probe",
        "version": "1.0.0",
        "instructions": "Answer.",
        "models": {"openai": "gpt-4.1-mini"},
        "output_schema": {"type": "object", "properties": {"answer": {"type": "txt"}}},
        "tools": [
            {
                "name": "lookup",
                "version": "1.0.0",
                "owner": "tests",
                "description": "Look something up.",
                "effect": "read",
                "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                "output_schema": {"type": "object", "properties": {"rows": {"maxItems": -1}}},
                "handler": "os:getcwd",
            }
        ],
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    with pytest.raises(SpecError) as caught:
        load_agent(tmp_path / "agent.yaml")
    found = {(p.path, p.message.split(":")[0]) for p in caught.value.problems}
    assert found == {
        ("output_schema.properties.answer.type", "the agent's output_schema"),
        ("tools.0.output_schema.properties.rows.maxItems", "tool 'lookup'"),
    }


def test_a_well_formed_spec_loads_without_importing_jsonschema() -> None:
    """The check answers the usual schemas itself (``schema_plain``); jsonschema (~80 ms) is for doubtful
    ones only, so loading an agent for a run costs no more than before."""
    import subprocess
    import sys

    code = (
        "import sys; from portagent.contracts.bundle import load_agent; "
        f"load_agent({str(EXAMPLES / 'support_desk' / 'agent.yaml')!r}); print('jsonschema' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
