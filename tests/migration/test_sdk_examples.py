"""Agents written the way the SDKs' own examples write them, imported and run on all three providers
against the emulator (issue 21): context-taking tools (openai-agents ``RunContextWrapper``, ADK
``ToolContext`` writing ``tool_context.state``) get portagent's portable ``ToolContext``, pydantic-model
returns are encoded, and what has no portable equivalent (``on_handoff``, input filters, callbacks,
``tool_context.actions``, ``wrapper.usage``) is in import-report.md with the line it came from.

What is checked is what the SDK really sent to the emulator (its request log): the tool results the
model saw, not portagent's own trace."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from _migration_helpers import SCRIPT, import_cli, run_spec
from _support import run_cli

from portagent.contracts.bundle import load_agent
from portagent.emulator import load_script, serve
from portagent.wire import anthropic as wire_anthropic
from portagent.wire import gemini as wire_gemini
from portagent.wire import openai as wire_openai

PROVIDERS = ["openai", "adk", pytest.param("claude", marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def emu():
    with serve(load_script(SCRIPT)) as running:
        yield running


@pytest.fixture(scope="module")
def airline(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("examples") / "airline"
    code, _, stderr = import_cli("sdk_examples_openai:triage_agent", "openai", out)
    assert code == 0, stderr
    return out


@pytest.fixture(scope="module")
def seat(tmp_path_factory) -> Path:
    """The seat specialist alone (its handoff-free graph runs on Claude too)."""
    out = tmp_path_factory.mktemp("examples") / "seat"
    code, _, stderr = import_cli("sdk_examples_openai:seat_booking_agent", "openai", out)
    assert code == 0, stderr
    return out


@pytest.fixture(scope="module")
def cart(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("examples") / "cart"
    code, _, stderr = import_cli("sdk_examples_adk:cart_agent", "adk", out)
    assert code == 0, stderr
    return out


def sent_back(entries: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(tool name, observation) for every tool result the SDK sent to the model, in order, read from
    the last request on the wire (it carries the whole conversation)."""
    entry = entries[-1]
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
    out = []
    for item in view.tool_results():
        name = (item.name or names.get(item.call_id) or "?").removeprefix("mcp__portagent__")
        raw = item.text if api == "anthropic.messages" else item.output
        if isinstance(raw, dict) and len(raw) == 1 and "result" in raw:
            raw = raw["result"]
        value = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(value, dict):  # imported tools are external_effect: their ledger id varies
            value.pop("effect_id", None)
        out.append((name, value))
    return out


def line_of(obj: Any) -> int:
    return inspect.getsourcelines(inspect.unwrap(obj))[1]


def line_with(module: Any, text: str) -> int:
    """The 1-based line of ``module``'s source that holds ``text``."""
    lines = Path(module.__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def report(out: Path) -> str:
    return (out / "import-report.md").read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


# --- what the report says ------------------------------------------------------------------------


def test_openai_example_report_lists_what_has_no_equivalent_with_its_line(airline):
    import sdk_examples_openai as native

    text = report(airline)
    lost = section(text, "Not imported")
    # on_handoff and the input filter of handoff(...), each with the file and line it came from
    assert "on_handoff=on_seat_handoff on triage_agent -> seat_booking_agent (" in lost
    assert f"sdk_examples_openai.py:{line_of(native.on_seat_handoff)})" in lost
    assert "input_filter=remove_all_tools" in lost and "handoff_filters.py:" in lost
    # a context member with no portable equivalent, at the line that uses it
    usage_line = line_with(native, "return wrapper.usage.requests")
    assert "wrapper.usage in function tool 'usage_so_far' on agent triage_agent" in lost
    assert f"sdk_examples_openai.py:{usage_line})" in lost
    # the SDK's own defaults are not "lost" (faq_agent sets no model: openai-agents fills in its default
    # model's reasoning/verbosity settings, which nobody wrote)
    assert "model_settings" not in lost
    assert "faq_agent sets no model" in section(text, "Imported with changes")
    # context-taking tools: a shim over the portable ToolContext, to review
    review = section(text, "Review before use")
    assert "handler is a shim (update_seat)" in review and "ToolContext.state" in review
    # the output_type model is imported as the SDK's own JSON Schema
    bundle = load_agent(airline / "agent.yaml")
    assert bundle.agents["seat_booking_agent"].spec.output_schema["properties"].keys() == {
        "seat",
        "confirmed",
    }


def test_adk_example_report_lists_callbacks_and_actions_with_their_lines(cart):
    import sdk_examples_adk as native

    lost = section(report(cart), "Not imported")
    assert "before_tool_callback audit on agent cart_agent (" in lost
    assert f"sdk_examples_adk.py:{line_of(native.audit)})" in lost
    actions_line = line_with(native, "tool_context.actions.escalate = True")
    assert "tool_context.actions in function tool 'escalate' on agent cart_agent" in lost
    assert f"sdk_examples_adk.py:{actions_line})" in lost
    assert "state" not in lost  # tool_context.state has a portable equivalent


# --- running the imported agents ---------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_runcontextwrapper_tools_share_state_and_pydantic_returns_on_every_provider(
    seat, emu, tmp_path, provider
):
    """update_seat writes ``wrapper.context.seat_number``; current_booking (a pydantic ``Booking``) reads
    it back in the next call: the model sees the seat on every provider."""
    bundle = load_agent(seat / "agent.yaml")
    before = len(emu.requests())
    out = run_spec(bundle, provider, "Move me to seat 12A.", emu, tmp_path)
    assert out.result.status == "completed", out.result.error
    results = sent_back(emu.requests()[before:])
    assert [n for n, _ in results] == ["update_seat", "current_booking"]
    assert results[0][1]["ok"] is True and results[0][1]["output"] == "Updated seat to 12A"
    booking = results[1][1]
    assert booking == {"ok": True, "seat": "12A", "passenger": None, "confirmed": True}
    assert out.result.final_output == {"seat": "12A", "confirmed": True}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_adk_tool_context_state_writes_persist_across_calls_on_every_provider(cart, emu, tmp_path, provider):
    bundle = load_agent(cart / "agent.yaml")
    before = len(emu.requests())
    out = run_spec(bundle, provider, "Put a mug and a tee in my cart.", emu, tmp_path)
    assert out.result.status == "completed", out.result.error
    results = sent_back(emu.requests()[before:])
    assert [n for n, _ in results] == ["add_to_cart", "add_to_cart", "cart_total"]
    assert [r["count"] for _, r in results[:2]] == [1, 2]  # the second call saw the first one's write
    assert results[0][1]["agent"] == "cart_agent"
    assert results[2][1] == {"ok": True, "count": 2, "total_eur": 32.5, "items": ["mug", "tee"]}
    assert out.result.final_output == {"count": 2, "total_eur": 32.5}


def test_state_is_per_session(cart, emu, tmp_path):
    """Two runs: each starts with an empty cart (state is per session, not global)."""
    bundle = load_agent(cart / "agent.yaml")
    for tag in ("a", "b"):
        before = len(emu.requests())
        out = run_spec(bundle, "openai", "Put a mug and a tee in my cart.", emu, tmp_path, tag=tag)
        assert out.result.status == "completed", out.result.error
        assert [r["count"] for n, r in sent_back(emu.requests()[before:]) if n == "add_to_cart"] == [1, 2]


def test_an_imported_folder_runs_from_any_folder_through_the_cli(seat, tmp_path, monkeypatch):
    """``portagent run`` from another folder, as written: the handler module beside the spec finds the
    original module by a path relative to itself (no PYTHONPATH)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    code, stdout, stderr = run_cli(
        "run",
        str(seat / "agent.yaml"),
        "--provider",
        "openai",
        "--emulator",
        str(SCRIPT),
        "--input",
        "Move me to seat 12A.",
        "--approver",
        "auto-approve",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0, stderr
    from portagent.tracing.recorder import read_trace

    results = [e for e in read_trace(tmp_path / "run" / "trace.jsonl") if e.type == "tool.result"]
    assert [(e.tool, e.ok) for e in results] == [("update_seat", True), ("current_booking", True)]
    assert results[1].output["seat"] == "12A"


@pytest.mark.parametrize(
    ("target", "sdk", "with_models"),
    [
        ("sdk_examples_adk:cart_agent", "adk", True),
        ("native_anthropic:AGENT", "anthropic", False),  # a model id for anthropic only
        ("native_langgraph:desk", "langgraph", False),  # ChatOpenAI: langgraph and openai
    ],
)
def test_the_next_hint_of_import_is_a_command_that_works(tmp_path, target, sdk, with_models):
    import shlex

    out = tmp_path / "my cart"
    if with_models:
        code, stdout, stderr = import_cli(target, sdk, out)
    else:
        code, stdout, stderr = run_cli("import", target, "--from", sdk, "--out", str(out))
    assert code == 0, stderr
    hint = next(line for line in stdout.splitlines() if line.startswith("next: "))
    for command in hint.removeprefix("next: ").split(" && "):
        argv = shlex.split(command)
        assert argv[0] == "portagent"
        code, _, err = run_cli(*argv[1:])
        assert code == 0, (command, err)


def test_an_exported_program_accepts_the_base_url_the_emulator_prints(seat, emu, tmp_path):
    """``portagent emulate`` prints OPENAI_BASE_URL=…/v1: the exported program must not ask …/v1/v1/…"""
    from _migration_helpers import run_exported

    module = tmp_path / "seat_openai.py"
    code, _, err = run_cli("export", str(seat / "agent.yaml"), "--to", "openai", "--out", str(module))
    assert code == 0, err
    before = len(emu.requests())
    events = run_exported(
        module, "openai", "Move me to seat 12A.", emu, tmp_path, base_url=emu.base_url + "/v1/"
    )
    paths = {e["path"] for e in emu.requests()[before:]}
    assert paths == {"/v1/responses"}
    assert events[-1].final_output == {"seat": "12A", "confirmed": True}
