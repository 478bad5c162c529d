"""Tool calls the model sent wrong, on the Anthropic Messages wire: refused, traced as sent, answered in full.

Two cases, each on the ``anthropic`` provider and on ``langgraph`` with a ChatAnthropic model, unary and
streamed, against the emulator (``langgraph/data/replies.yaml``, the adapter tests' shop agents):

- a call whose input text is cut JSON. Streamed, the anthropic SDK builds the block's ``input`` with jiter's
  partial mode, which completes ``{"query":"shi`` into a search for "shi": the tool must not run; the
  trace keeps the text the model sent and the gateway answers ``validation_error``, as unstreamed;
- a call to an agent-as-tool whose arguments are not ``{"input": string}``: the sub-agent does not run, the
  refused call is traced as a tool call refused for its arguments is (``tool.call`` via ``agent`` and its
  ``validation_error`` result), and the model is sent the gateway's whole answer (details, next_allowed).

What the model was sent back is read from the emulator's request log (the raw request bodies), not from
the trace.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
sys.path.insert(0, str(Path(__file__).resolve().parent / "anthropic"))
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_spec,
)

from portagent.contracts.bundle import AgentBundle
from portagent.emulator import RunningEmulator, load_script, serve

SCRIPT = Path(__file__).resolve().parent / "langgraph" / "data" / "replies.yaml"
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
PROVIDERS = pytest.mark.parametrize("provider", ["anthropic", "langgraph"])
# the anthropic SDK warns while it copies a reply whose tool input is text into the history (pinned in
# test_anthropic_adapter.py's test_malformed_arguments_get_a_validation_error)
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")


@pytest.fixture(name="emu", scope="module")
def replies_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


def desk(provider: str) -> AgentBundle:
    """The shop desk (handoffs removed); on langgraph its chat model is Anthropic's."""
    b = bundle()
    if provider == "langgraph":
        models = b.node.spec.models.model_copy(update={"langgraph": "anthropic:claude-sonnet-4-6"})
        b = with_spec(b, b.root, models=models)
    return b


def sent_back(r: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """From the last request body the SDK sent: the reply's only ``tool_use`` block and its ``tool_result``."""
    messages = r.requests[-1]["body"]["messages"]
    (use,) = [
        b for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"
    ]
    (result,) = [
        b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
    ]
    assert result["type"] == "tool_result" and result["tool_use_id"] == use["id"]
    return use, result


def result_text(result: dict[str, Any]) -> Any:
    content = result["content"]
    if isinstance(content, list):  # LangChain sends a ToolMessage's text as a text block
        content = "".join(b["text"] for b in content if b.get("type") == "text")
    return json.loads(content)


@PROVIDERS
@STREAMING
def test_cut_tool_input_is_refused_as_sent_never_run_as_guessed(emu, provider, streaming):
    """``{"query":"shi`` (the emulator's malformed_arguments fault cuts ``{"query":"shipping times"}`` in
    half) is not a search for "shi": the handler never runs, the trace holds the text, the gateway's
    validation_error ("arguments are not valid JSON") is what the model reads — streamed as unstreamed."""
    emu.reset()
    r = go(emu, desk(provider), "Search with broken arguments.", provider, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert handlers.CALLS == {}  # search_faq never ran
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.args) == ("search_faq", '{"query":"shi')
    assert (res.ok, res.error) == (False, "validation_error")
    assert res.output["message"].startswith("arguments are not valid JSON"), res.output
    assert r.result.final_output == "After the broken search: validation_error"
    # what the SDK sent back: the call answered by its id with the gateway's refusal
    use, result = sent_back(r)
    assert use["id"] == call.provider_details["vendor_call_id"]
    answer = result_text(result)
    assert answer["error"] == "validation_error" and answer["message"].startswith(
        "arguments are not valid JSON"
    )
    assert result.get("is_error") is True
    if provider == "anthropic":  # the runner sends the reply back as it has it: the text, not a guess
        assert use["input"] == '{"query":"shi'


BAD_DELEGATIONS = [
    ("Ask the expert without a question.", {}, "arguments do not match faq_expert's input schema"),
    ("Ask the expert a number.", {"input": 42}, "arguments do not match faq_expert's input schema"),
    # {"input":"How fast are refunds?"} cut in half
    ("Ask the expert with broken arguments.", '{"input":"How fa', "arguments are not valid JSON"),
]


@PROVIDERS
@STREAMING
@pytest.mark.parametrize(("question", "args", "message"), BAD_DELEGATIONS, ids=["empty", "number", "cut"])
def test_a_refused_delegation_is_traced_and_answered_as_the_gateway_answers(
    emu, provider, streaming, question, args, message
):
    """An agent-as-tool call without ``{"input": string}``: the sub-agent does not run (no handoff, no
    request of its own), the refused call is in the trace as a tool call refused for its arguments, and
    the model reads the gateway's whole validation_error — the same on both providers."""
    emu.reset()
    r = go(emu, desk(provider), question, provider, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert not r.of("handoff") and len(r.requests) == 2  # the desk's two model calls; none by the expert
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.args, call.via, call.agent) == ("faq_expert", args, "agent", "shop_desk")
    assert (res.call_id, res.tool, res.ok, res.error) == (
        call.call_id,
        "faq_expert",
        False,
        "validation_error",
    )
    assert res.output["message"].startswith(message)
    assert res.output["next_allowed"] and res.output["details"]
    use, result = sent_back(r)
    assert use["name"] == "faq_expert" and use["id"] == call.provider_details["vendor_call_id"]
    assert result_text(result) == res.output  # the gateway's answer, whole (details, next_allowed)
    assert result.get("is_error") is True


def refused_delegation(r: Any, args: Any, message: str) -> tuple[Any, Any, Any]:
    """The run went on past one refused call to faq_expert (no handoff, no request by the expert); its
    ``tool.call`` and ``tool.result`` events, and the run."""
    assert r.result.status == "completed", r.result.error
    assert not r.of("handoff") and len(r.requests) == 2  # the desk's two model calls; none by the expert
    (call,) = r.of("tool.call")
    (res,) = r.of("tool.result")
    assert (call.tool, call.args, call.via, res.call_id) == ("faq_expert", args, "agent", call.call_id)
    assert (res.ok, res.error) == (False, "validation_error")
    assert res.output["message"].startswith(message) and res.output["next_allowed"]
    return call, res, r


@STREAMING
@pytest.mark.parametrize(("question", "args", "message"), BAD_DELEGATIONS[:2], ids=["empty", "number"])
def test_adk_refuses_a_delegation_without_its_task_the_same_way(emu, streaming, question, args, message):
    """ADK: the same refusal (Gemini sends arguments as an object, so there is no cut text). Before, ADK ran
    the sub-agent with the arguments' JSON (``{}``) as its task and traced a handoff."""
    pytest.importorskip("google.adk", reason="google-adk is not installed (pip install 'portagent[adk]')")
    emu.reset()
    call, res, r = refused_delegation(go(emu, bundle(), question, "adk", streaming=streaming), args, message)
    # what ADK sent Gemini back: the function response of that call holds the gateway's refusal
    contents = r.requests[-1]["body"]["contents"]
    (answer,) = [
        p["functionResponse"] for c in contents for p in c.get("parts", []) if "functionResponse" in p
    ]
    assert answer["name"] == "faq_expert"
    assert json.dumps(answer["response"], sort_keys=True).count("validation_error") >= 1


@STREAMING
@pytest.mark.parametrize(("question", "args", "message"), BAD_DELEGATIONS, ids=["empty", "number", "cut"])
def test_openai_refuses_a_delegation_without_its_task_the_same_way(emu, streaming, question, args, message):
    """openai-agents: the same refusal. Before, the agent tool's own argument parsing failed the whole run
    (``ModelBehaviorError``) — or, for a wrong type, ran the sub-agent on it."""
    pytest.importorskip("agents", reason="openai-agents is not installed (pip install 'portagent[openai]')")
    emu.reset()
    call, res, r = refused_delegation(
        go(emu, bundle(), question, "openai", streaming=streaming), args, message
    )
    # what the SDK sent back: the function call's output is the gateway's refusal, whole
    (output,) = [i for i in r.requests[-1]["body"]["input"] if i.get("type") == "function_call_output"]
    assert output["call_id"] == call.provider_details["vendor_call_id"]
    assert json.loads(output["output"]) == res.output
