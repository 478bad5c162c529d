"""Issue 14, finding 9: what a handler returns or does never ends a run on its own.

One JSON encoder (``tools/observations.to_jsonable``) turns pydantic models, dataclasses, enums,
datetimes, bytes, sets and tuples into JSON; a cycle or an integer too long for JSON becomes an
``output_not_serializable`` observation; ``sys.exit(n)`` in a handler becomes ``handler_error``. The
real SDKs run against the emulator, and the emulator's request log shows what each SDK actually sent
back to the model: the same JSON on openai, adk and claude, and a ``tool.result`` for every call.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import portagent_home, run_cli

from portagent.adapters.port import Endpoint
from portagent.contracts.bundle import load_agent
from portagent.contracts.run import RunRequest
from portagent.core.clock import FixedClock, IdFactory
from portagent.emulator import load_script, serve
from portagent.runtime.runner import RunConfig, arun_full
from portagent.tools.observations import NotSerializable, to_jsonable
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai

HANDLERS = """
import asyncio, dataclasses, datetime, enum, sys
from pydantic import BaseModel


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Line:
    sku: str
    qty: int


class Order(BaseModel):
    order_id: str
    placed: datetime.datetime
    color: Color
    lines: list[Line]


def model():
    return Order(order_id="O-1", placed=datetime.datetime(2026, 1, 2, 3, 4, 5), color=Color.RED,
                 lines=[Line("A", 2)])


def mixed():
    return {"when": datetime.date(2026, 1, 2), "blob": b"\\x00\\xffhi", "tags": {"b", "a"},
            "pair": (1, 2), "color": Color.RED}


def cycle():
    d = {"name": "loop"}
    d["self"] = d
    return d


def huge():
    return {"n": 10 ** 5000}


def exits():
    sys.exit(4)


async def aexits():
    await asyncio.sleep(0)
    sys.exit(5)
"""

TOOLS = ["model", "mixed", "cycle", "huge", "exits", "aexits"]
EXPECTED: dict[str, Any] = {
    "model": {
        "ok": True,
        "order_id": "O-1",
        "placed": "2026-01-02T03:04:05",
        "color": "red",
        "lines": [{"sku": "A", "qty": 2}],
    },
    "mixed": {
        "ok": True,
        "when": "2026-01-02",
        "blob": base64.b64encode(b"\x00\xffhi").decode(),
        "tags": ["a", "b"],
        "pair": [1, 2],
        "color": "red",
    },
}
ERRORS = {
    "cycle": "output_not_serializable",
    "huge": "output_not_serializable",
    "exits": "handler_error",
    "aexits": "handler_error",
}
DUMMY = {"openai": "sk-portagent-dummy", "claude": "sk-ant-portagent-dummy", "adk": "portagent-dummy-key"}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("outputs")
    (root / "odd_outputs.py").write_text(textwrap.dedent(HANDLERS))
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    spec = {
        "kind": "agent",
        "schema_version": 1,
        "name": "outputs",
        "version": "1.0.0",
        "instructions": "Call the tools.",
        "models": {"openai": "gpt-4.1-mini", "claude": "claude-sonnet-4-6", "adk": "gemini-2.5-flash"},
        "tools": [
            {
                "name": t,
                "description": f"The {t} tool.",
                "effect": "read",
                "input_schema": schema,
                "handler": f"odd_outputs:{t}",
            }
            for t in TOOLS
        ],
    }
    script = {
        "kind": "emulator-script",
        "schema_version": 1,
        "name": "outputs",
        "conversations": [
            {
                "name": "all",
                "match": {"first_user": "Call every tool."},
                "turns": [
                    {"tool_calls": [{"name": t, "arguments": {}} for t in TOOLS]},
                    {"text": "Done."},
                ],
            }
        ],
    }
    (root / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "emulator.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    sys.path.insert(0, str(root))
    return root


def _sent_back(entry: dict[str, Any]) -> dict[str, Any]:
    """Tool name → the observation the SDK sent to the model, parsed from the request on the wire."""
    api, body = entry["api"], entry["body"]
    if api == "openai.responses":
        view = wire_openai.parse_responses_request(body)
    elif api == "openai.chat":
        view = wire_openai.parse_chat_request(body)
    elif api == "anthropic.messages":
        view = wire_anthropic.parse_messages_request(body)
    else:
        view = wire_gemini.parse_generate_content_request(body, stream=bool(entry.get("stream")))
    names = {i.call_id: i.name for i in view.items if i.kind == "tool_call"}
    out = {}
    for item in view.tool_results():
        name = (item.name or names.get(item.call_id) or "?").removeprefix("mcp__portagent__")
        raw = item.text if api == "anthropic.messages" else item.output
        if isinstance(raw, dict) and len(raw) == 1 and "result" in raw:
            raw = raw["result"]
        out[name] = json.loads(raw) if isinstance(raw, str) else raw
    return out


def _run(agent: Path, provider: str, tmp: Path) -> tuple[Any, dict[str, Any]]:
    with serve(load_script(agent / "emulator.yaml")) as emu:
        config = RunConfig(
            endpoint=Endpoint(source="emulator", base_url=emu.base_url, api_key=DUMMY[provider]),
            clock=FixedClock(),
            ids=IdFactory("outputs"),
        )
        with portagent_home(tmp / f"home-{provider}"):
            out = asyncio.run(
                arun_full(
                    load_agent(agent / "agent.yaml"),
                    RunRequest(input="Call every tool.", provider=provider),
                    config,
                )
            )
        return out, _sent_back(emu.requests()[-1])


@pytest.mark.parametrize("provider", ["openai", "adk", pytest.param("claude", marks=pytest.mark.slow)])
def test_odd_outputs_give_the_same_observation_on_every_provider(
    agent: Path, tmp_path: Path, provider: str
) -> None:
    out, sent = _run(agent, provider, tmp_path)
    assert out.result.status == "completed", out.result
    results = {e.tool: e for e in out.events if e.type == "tool.result"}
    calls = [e.tool for e in out.events if e.type == "tool.call"]
    assert sorted(calls) == sorted(TOOLS) and sorted(results) == sorted(TOOLS)  # a result for every call
    for tool, expected in EXPECTED.items():
        assert sent[tool] == expected, (tool, sent[tool])
        assert results[tool].ok
    for tool, code in ERRORS.items():
        assert sent[tool]["ok"] is False and sent[tool]["error"] == code, (tool, sent[tool])
        assert results[tool].error == code
    assert (
        sent["cycle"]["details"]["reason"].endswith("(a cycle)")
        and sent["cycle"]["details"]["path"] == "$.self"
    )
    assert "sys.exit(4)" in sent["exits"]["message"] and "sys.exit(5)" in sent["aexits"]["message"]


def test_the_encoder_keeps_plain_json_byte_identical() -> None:
    plain = {"b": [1, 2.5, "x", None, True, {"z": "é"}], "a": {"n": 10**18}}
    assert json.dumps(to_jsonable(plain), ensure_ascii=False, sort_keys=True) == json.dumps(
        plain, ensure_ascii=False, sort_keys=True
    )
    assert list(to_jsonable(plain)) == ["b", "a"]


def test_the_encoder_refuses_what_json_cannot_carry() -> None:
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    lst: list[Any] = []
    lst.append(lst)
    for value, reason in (
        (deep, "levels deep"),
        (lst, "cycle"),
        (object(), "has no JSON form"),
        ({(1, 2): 1}, "key"),
    ):
        with pytest.raises(NotSerializable, match=reason):
            to_jsonable(value)
    shared = [1]
    assert to_jsonable({"a": shared, "b": shared}) == {"a": [1], "b": [1]}  # shared is not a cycle


def test_a_module_exiting_at_import_is_one_message_and_exit_2(agent: Path, tmp_path: Path) -> None:
    """``--approver module:function`` imports the module before the run: its ``sys.exit(7)`` is a usage
    error (exit 2, one line), not portagent ending silently with exit 7."""
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(7)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with portagent_home(tmp_path / "home"):
            code, out, err = run_cli(
                "run", str(agent / "agent.yaml"), "--provider", "openai", "--input", "Call every tool.",
                "--emulator", str(agent / "emulator.yaml"), "--approver", "exits_on_import:decide",
                "--out", str(tmp_path / "out"),
            )  # fmt: skip
    finally:
        sys.path.remove(str(tmp_path))
    assert code == 2, out + err
    assert "sys.exit(7)" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
