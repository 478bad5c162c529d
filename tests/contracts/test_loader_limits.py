"""Loader limits (issue 14, finding 4): a spec means what it says, and hostile files are bounded.

Duplicate keys are an error (a later ``decision: allow`` must not silently replace ``deny``); spec files
must be regular files within ``$PORTAGENT_MAX_SPEC_BYTES``; YAML alias expansion is bounded in every
mapping, ``input_schema`` included; schemas are size-checked when the spec is validated.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from _support import run_cli

from portagent.contracts.errors import SpecError
from portagent.contracts.loader import load_spec_file

TOOL_HEAD = """kind: tool
schema_version: 1
name: lookup
description: Look something up.
effect: read
handler: mod:fn
"""


def validate(path: Path | str) -> tuple[int, str]:
    started = time.monotonic()
    code, _out, err = run_cli("validate", str(path))
    assert time.monotonic() - started < 5, "validate must answer at once"
    assert "Traceback" not in err
    return code, err


def test_duplicate_key_in_a_policy_is_an_error_with_file_line_and_field(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text(
        "kind: policy\nschema_version: 1\nrules:\n"
        "  - id: no-sends\n    decision: deny\n    tool: send_*\n    decision: allow\n"
    )
    code, err = validate(p)
    assert code == 1
    assert f"{p}:7 [rules.0.decision]" in err and "duplicate key 'decision' (first at line 5)" in err
    with pytest.raises(SpecError):
        load_spec_file(p)


def test_duplicate_key_at_the_top_and_in_a_schema(tmp_path):
    p = tmp_path / "tool.yaml"
    p.write_text(
        TOOL_HEAD + "effect: privileged_operation\n"
        "input_schema:\n  type: object\n  properties:\n    a: {type: string}\n    a: {type: number}\n"
    )
    code, err = validate(p)
    assert code == 1
    assert "[effect]" in err and "[input_schema.properties.a]" in err


def test_merge_keys_are_not_duplicates(tmp_path):
    p = tmp_path / "tool.yaml"
    p.write_text(
        TOOL_HEAD + "input_schema:\n  type: object\n  properties:\n"
        "    base: &b {type: string, maxLength: 3}\n    other:\n      <<: *b\n      maxLength: 5\n"
    )
    assert validate(p)[0] == 0


def test_duplicate_key_in_json(tmp_path):
    p = tmp_path / "policy.json"
    p.write_text('{"kind": "policy", "schema_version": 1, "rules": [], "rules": []}')
    code, err = validate(p)
    assert code == 1 and "duplicate key 'rules'" in err


def _bomb(levels: int = 9) -> str:
    lines = ["  x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, levels):
        lines.append(f"  x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def test_yaml_bomb_inside_input_schema_is_refused_at_once(tmp_path):
    p = tmp_path / "tool.yaml"
    p.write_text(TOOL_HEAD + "input_schema:\n  type: object\n  properties: {}\n" + _bomb())
    started = time.monotonic()
    code, err = validate(p)
    assert code == 1 and "YAML aliases expand to more than" in err
    assert time.monotonic() - started < 2


def test_alias_budget_is_configurable_and_small_reuse_is_fine(tmp_path, monkeypatch):
    p = tmp_path / "tool.yaml"
    p.write_text(TOOL_HEAD + "input_schema:\n  type: object\n  properties: {}\n" + _bomb(3))
    assert validate(p)[0] == 0  # 1,110 nodes: ordinary reuse of anchors
    monkeypatch.setenv("PORTAGENT_MAX_ALIAS_NODES", "100")
    code, err = validate(p)
    assert code == 1 and "PORTAGENT_MAX_ALIAS_NODES" in err


def test_recursive_alias_is_refused(tmp_path):
    p = tmp_path / "tool.yaml"
    p.write_text(TOOL_HEAD + "input_schema: &s\n  type: object\n  properties: {self: *s}\n")
    code, err = validate(p)
    assert code == 1 and "refers to itself" in err


def test_dev_zero_answers_at_once():
    code, err = validate("/dev/zero")
    assert code == 1
    assert err.count("spec files must be regular files") == 1 and "character device" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_answers_at_once(tmp_path):
    fifo = tmp_path / "agent.yaml"
    os.mkfifo(fifo)
    code, err = validate(fifo)
    assert code == 1 and "FIFO" in err and err.count("regular files") == 1


def test_size_limit_is_configurable(tmp_path, monkeypatch):
    p = tmp_path / "policy.yaml"
    p.write_text("kind: policy\nschema_version: 1\nname: " + "x" * 2000 + "\n")
    assert validate(p)[0] == 0
    monkeypatch.setenv("PORTAGENT_MAX_SPEC_BYTES", "1000")
    code, err = validate(p)
    assert code == 1 and "larger than 1000 bytes" in err and "PORTAGENT_MAX_SPEC_BYTES" in err
    monkeypatch.setenv("PORTAGENT_MAX_SPEC_BYTES", "lots")
    code, err = validate(p)
    assert code == 2 and "must be a positive integer" in err  # the environment, not the spec: exit 2


def test_oversized_schema_is_refused_at_validate_time(tmp_path):
    props = {f"p{i}": {"type": "string", "description": "d" * 200} for i in range(2000)}
    doc = {
        "kind": "tool",
        "schema_version": 1,
        "name": "big",
        "description": "big schema",
        "effect": "read",
        "handler": "mod:fn",
        "input_schema": {"type": "object", "properties": props},
    }
    p = tmp_path / "tool.json"
    p.write_text(json.dumps(doc))
    code, err = validate(p)
    assert code == 1 and "input_schema is" in err and "bytes of JSON" in err


def test_schema_built_in_python_with_shared_parts_is_counted_without_expanding():
    from pydantic import ValidationError

    from portagent.contracts.tool import ToolSpec

    shared: list[object] = [1] * 10
    for _ in range(8):
        shared = [shared] * 10  # 10^9 values once expanded
    started = time.monotonic()
    with pytest.raises(ValidationError) as caught:
        ToolSpec(
            name="t",
            description="d",
            effect="read",
            handler="m:f",
            input_schema={"type": "object", "properties": {}, "x": shared},
        )
    # (pydantic's own str() of the error would render the input, expanded: read the message alone)
    assert "more than 20000 values" in caught.value.errors(include_input=False)[0]["msg"]
    assert time.monotonic() - started < 1


def test_a_huge_integer_and_a_loop_of_links_get_portagents_own_words(tmp_path):
    """Held-out inputs: a 5000-digit integer got Python's "use sys.set_int_max_str_digits()" advice, and a
    loop of symbolic links was reported as "no such file or directory"."""
    from _support import run_cli

    big = tmp_path / "big.yaml"
    big.write_text(
        "kind: tool\nschema_version: 1\nname: x\ndescription: d\neffect: read\nhandler: m:f\n"
        "input_schema: {type: object, properties: {a: {type: integer, maximum: " + "9" * 5000 + "}}}\n",
        encoding="utf-8",
    )
    code, _, err = run_cli("validate", str(big))
    assert code == 1 and "more than 4300 digits" in err and "sys.set_int_max_str_digits" not in err
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    code, _, err = run_cli("validate", str(tmp_path / "a.yaml"))
    assert code == 2 and "leads nowhere" in err
