"""``portagent export --to langgraph`` (and ``--to anthropic``): a tool call whose argument text the model
broke, in any of the ways tests/adapters/test_malformed_arguments.py covers for the adapters, is refused by
the gateway in the exported program too — never run, never the end of the run.

The exported langgraph program has its own chat-model subclasses and its own ``read_calls``, so the
adapter's fix does not reach it. Each shape (cut, a trailing brace, two objects, single quotes, a trailing
comma, an array, a string, ``null``) on each chat model the program can have on a wire that carries such
text (ChatOpenAI on the Responses API and on Chat Completions; ChatAnthropic, whose emulated unary reply
carries the text where the input object belongs), and on the exported anthropic program: the run
completes; the handler never runs; the trace's ``tool.call`` holds what the model sent (its value when the
text is JSON, else the text) and its ``tool.result`` the gateway's ``validation_error``; and the next
request answers that call, by its id, with that error.

Found wrong before: with ChatOpenAI, arguments that are JSON but not an object (an array, a string,
``null``) failed the run inside langchain-openai, which hands such a value to ``AIMessage`` as the call's
``args`` (pydantic refuses it) — on Chat Completions in ``_create_chat_result``, on the Responses API in
``_construct_lc_result_from_responses_api``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters" / "anthropic"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
from _migration_helpers import DUMMY_KEYS, Ran, load_module
from _support import parse_request, portagent_home, run_cli
from runtime_testkit import (
    DATA,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    handlers,
)

from portagent.emulator import RunningEmulator, load_script, serve
from portagent.tracing.recorder import read_trace

SCRIPT = Path(__file__).resolve().parents[1] / "adapters" / "data" / "malformed_arguments.yaml"
# the anthropic SDK warns while it copies a reply whose tool input is text into the history
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")

TARGETS: dict[str, tuple[str, str | None, str | None]] = {
    "langgraph-responses": ("langgraph", "openai:gpt-4.1-mini", None),
    "langgraph-chat": ("langgraph", "openai:gpt-4.1-mini", "chat_completions"),
    "langgraph-anthropic": ("langgraph", "anthropic:claude-sonnet-4-6", None),
    "anthropic": ("anthropic", None, None),
}
"""(export target, models.langgraph, models.openai_api) per exported program."""

SHAPES: dict[str, str] = {
    "cut": '{"query":"shi',  # the emulator cuts {"query":"shipping times"} in half
    "trailing brace": '{"query": "shipping times"}}',
    "two objects": '{"query": "shipping times"}{"query": "refunds"}',
    "single quotes": "{'query': 'shipping times'}",
    "trailing comma": '{"query": "shipping times",}',
    "an array": '["shipping times"]',
    "a string": '"shipping times"',
    "null": "null",
}
"""The script's conversation (``Search: <shape>.``) → the exact text its call carries."""


@pytest.fixture(name="emu", scope="module")
def emulator_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


@pytest.fixture(name="program", scope="module")
def program_fixture(tmp_path_factory) -> Any:
    """``program(target)``: the shop desk exported as TARGETS says, loaded (once per target)."""
    root = tmp_path_factory.mktemp("export-malformed-arguments")
    data = root / "data"
    # without shop_handlers.py: the program resolves handlers beside the tools file first (ADR 0004), so a
    # copy there would be a second module whose counters this test does not read
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__", "shop_handlers.py"))
    cache: dict[str, Any] = {}

    def program(target: str) -> Any:
        if target not in cache:
            to, model, api = TARGETS[target]
            spec = yaml.safe_load((data / "desk.yaml").read_text(encoding="utf-8"))
            if model is not None:
                spec["models"]["langgraph"] = model
            if api is not None:
                spec["models"]["openai_api"] = api
            if to == "anthropic":  # no handoffs there: the desk keeps its agent tool
                spec["delegation"] = [e for e in spec["delegation"] if e["kind"] == "agent_as_tool"]
            stem = f"desk_{target.replace('-', '_')}"
            path = data / f"{stem}.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
            module = root / f"{stem}.py"
            code, _, err = run_cli("export", str(path), "--to", to, "--out", str(module))
            assert code == 0, err
            cache[target] = load_module(module)
        return cache[target]

    return program


def run(module: Any, emu: RunningEmulator, text: str, tmp: Path, target: str) -> Ran:
    """The exported program's ``main()`` on one message (auto-approve: nothing is refused by the policy)."""
    before = len(emu.requests())
    trace = tmp / "exported.jsonl"
    with portagent_home(tmp / "home"):
        done = asyncio.run(
            asyncio.wait_for(
                module.main([text], base_url=emu.base_url, api_key=DUMMY_KEYS[TARGETS[target][0]],
                            approver="auto-approve", trace=trace, source="emulator"),
                120,
            )
        )  # fmt: skip
    return Ran(done, read_trace(trace), emu.requests()[before:])


def _as_sent(text: str) -> Any:
    """What the trace holds of a call's arguments: their value when the text is JSON, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("target", list(TARGETS))
def test_broken_arguments_are_refused_as_sent_and_the_run_goes_on(emu, program, tmp_path, target, shape):
    r = run(program(target), emu, f"Search: {shape}.", tmp_path, target)

    assert r.done["status"] == "completed", r.done.get("error")
    assert handlers.CALLS == {}  # search_faq never ran
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.args) == ("search_faq", _as_sent(SHAPES[shape]))
    assert (res.call_id, res.ok, res.error) == (call.call_id, False, "validation_error")
    assert r.done["final_output"] == "After the search: validation_error"
    # what the SDK sent next: the call, by its id, answered with the gateway's refusal
    assert len(r.requests) == 2
    (answer,) = [i for i in parse_request(r.requests[1]).items if i.kind == "tool_result"]
    assert answer.call_id == call.provider_details["vendor_call_id"]
    assert '"validation_error"' in answer.text, answer.text
