"""The langgraph adapter (an explicit StateGraph over LangChain chat models) against the emulator.

Real LangGraph and real LangChain integrations (langchain-openai, -anthropic, -google-genai), real gateway,
no mocks. The cross-provider equivalence lives in ``tests/adapters/test_equivalence.py`` (``langgraph`` is
one of its providers, on its default OpenAI chat model); these tests pin the chat-model vendors, the
interrupt that carries an approval, handoffs and cycles, and the CLI paths.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "anthropic"))
from _support import EXAMPLES, run_cli
from runtime_testkit import (
    DATA,
    bundle,
    emulator_fixture,  # noqa: F401  (the "emu" fixture)
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    results_sent,
    with_budget,
    with_spec,
)

from portagent.contracts.errors import UsageError
from portagent.tools.approvals import ApprovalStore

HERE = Path(__file__).resolve().parent
SUITE = HERE / "data" / "suite.yaml"
P = "langgraph"
VENDORS = {
    "openai": ("openai:gpt-4.1-mini", "openai.responses"),
    "anthropic": ("anthropic:claude-sonnet-4-6", "anthropic.messages"),
    "google_genai": ("google_genai:gemini-2.5-flash", "gemini.generate_content"),
}


def on(vendor: str, name: str = "desk", *, handoffs: bool = False):
    b = bundle(name, handoffs=handoffs)
    return with_spec(b, models=b.spec.models.model_copy(update={"langgraph": VENDORS[vendor][0]}))


# --- the chat model's vendor is the spec's choice ----------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("vendor", list(VENDORS))
def test_two_tools_on_each_chat_model_vendor(emu, vendor, streaming):
    emu.reset()
    r = go(emu, on(vendor), "Where is order ORD-7 and how fast do you ship?", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "Order ORD-7 is delivered. Orders ship within 2 working days."
    assert [(c.tool, c.args) for c in r.of("tool.call")] == [
        ("get_order", {"order_id": "ORD-7", "include_items": True}),
        ("search_faq", {"query": "shipping times"}),
    ]
    assert handlers.CALLS == {"get_order": 1, "search_faq": 1}
    # one request per model call: no retry, also on the second run in this process (a client bound to a
    # closed event loop would fail once and be retried silently: the ChatAnthropic override)
    assert {q["api"] for q in r.requests} == {VENDORS[vendor][1]} and len(r.requests) == 3
    calls = r.of("model.call")
    assert [c.finish_reason for c in calls] == ["tool_calls", "tool_calls", "stop"]
    assert calls[0].provider_details["vendor"] == vendor and calls[0].input_tokens == 500
    # the vendor's response id, or none where LangChain keeps only its own run id (Gemini; a streamed
    # Anthropic answer): never "lc_run--…" passed off as the vendor's
    ids = [c.response_id for c in calls]
    assert not any(i and i.startswith("lc_run") for i in ids), ids
    if vendor == "openai" or (vendor == "anthropic" and not streaming):
        assert all(i and "emu" in i for i in ids), ids
    assert r.result.cost_usd and r.result.cost_usd > 0  # priced by the model id (genai-prices)
    assert [name for name, _ in results_sent(r)] == ["get_order", "search_faq"]


def test_declared_schemas_per_vendor(emu):
    b = bundle("desk")
    wanted = b.node.tools["get_order"].input_schema
    for vendor in ("openai", "anthropic"):
        r = go(emu, on(vendor), "Where is order ORD-7 and how fast do you ship?", P)
        body = r.requests[0]["body"]
        declared = {
            t.get("name") or t["function"]["name"]: t.get("input_schema") or t.get("parameters")
            for t in body["tools"]
        }
        assert declared["get_order"] == wanted, vendor  # verbatim
    # Gemini too: parametersJsonSchema as written (langchain-google-genai's own conversion to the OpenAPI
    # subset turned ["integer", "null"] into a string and made optional nested properties required)
    r = go(emu, on("google_genai"), "Where is order ORD-7 and how fast do you ship?", P)
    (tool,) = r.requests[0]["body"]["tools"]
    declared = {f["name"]: f for f in tool["functionDeclarations"]}
    got = declared["get_order"]
    # google-genai passes this key through in snake_case, as for adk (wire/gemini.py reads both)
    assert (got.get("parametersJsonSchema") or got.get("parameters_json_schema")) == wanted
    assert "parameters" not in got
    code, out, _ = run_cli("validate", "--provider", P, str(DATA / "faq_expert.yaml"))
    assert code == 0


# --- approvals are LangGraph interrupts --------------------------------------------------------------


def test_deferred_approval_is_an_interrupt_then_resumes_once(emu):
    key = "langgraph-refund-ord-7"
    first = go(
        emu, "desk", "Refund 30 EUR for ORD-7.", P, approver="defer", idempotency_key=key, seeded=False
    )
    assert (first.result.status, first.result.stop_reason) == ("waiting_approval", "approval_pending")
    assert len(first.requests) == 1 and handlers.REFUNDS == []
    store = ApprovalStore()
    try:
        store.approve(first.result.pending_approvals[0], reviewer="tester")
    finally:
        store.close()
    second = go(
        emu, "desk", "Refund 30 EUR for ORD-7.", P, approver="defer", idempotency_key=key, seeded=False
    )
    assert second.result.status == "completed", second.result.error
    assert (second.result.run_id, second.result.attempt) == (first.result.run_id, 2)
    assert handlers.REFUNDS == [{"order_id": "ORD-7", "amount_eur": 30}]


def test_interrupt_reaches_the_graph():
    """The graph itself stops with LangGraph's ``__interrupt__`` (not only portagent's signal)."""
    from langgraph.graph import END, START, StateGraph

    from portagent.adapters.langgraph import agent as lg

    seen: list[object] = []
    original = lg._Graph.run

    async def spy(self, agent, messages, *, thread):
        config = {"configurable": {"thread_id": f"{self.session.run_id}/{self.session.attempt}/{thread}"}}
        try:
            return await original(self, agent, messages, thread=thread)
        finally:
            seen.append(self.app.get_state(config).interrupts)

    assert StateGraph and START and END  # the adapter's own graph is what runs
    lg._Graph.run = spy  # type: ignore[method-assign]
    try:
        from portagent.emulator import load_script, serve

        with serve(load_script(DATA / "emulator.yaml")) as emu:
            r = go(emu, "desk", "Refund 30 EUR for ORD-7.", P, approver="defer")
    finally:
        lg._Graph.run = original  # type: ignore[method-assign]
    assert r.result.status == "waiting_approval"
    (interrupts,) = seen
    (it,) = interrupts
    assert it.value["approval_id"] == r.result.pending_approvals[0]
    # the run's threads are gone from the process's checkpointer once it ends
    assert not list(lg._app().checkpointer.list(None))


# --- budgets, delegation, structured output ----------------------------------------------------------


def test_budgets_stop_before_the_next_request(emu):
    r = go(emu, "desk", "Keep searching the FAQ.", P)
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_tool_calls")
    assert handlers.CALLS["search_faq"] == 4 and len(r.requests) == 5
    r = go(emu, with_budget(bundle(), max_turns=3, max_tool_calls=20), "Keep searching the FAQ.", P)
    assert (r.result.stop_reason, len(r.requests)) == ("max_turns", 3)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_handoff_changes_the_agent_in_charge(emu, vendor):
    r = go(emu, on(vendor, handoffs=True), "My parcel ORD-8 never arrived.", P)
    assert r.result.final_output == "Order ORD-8 is lost; I will look after your refund."
    (handoff,) = r.of("handoff")
    assert (handoff.to_agent, handoff.kind) == ("refunds_specialist", "handoff")
    assert [c.agent for c in r.of("tool.call")] == ["refunds_specialist"]
    specialist = bundle("refunds_specialist").node.spec.instructions
    system = r.requests[-1]["body"].get("system") or r.requests[-1]["body"].get("instructions")
    if isinstance(system, list):
        system = system[0]["text"]
    if system is None:  # the Responses API carries it as the first input item
        system = r.requests[-1]["body"]["input"][0]["content"]
    assert specialist.strip() in str(system)


def test_handoff_cycles_are_allowed(emu):
    b = bundle(str(DATA / "cycle_a.yaml"), handoffs=True)
    from portagent.adapters.portability import verdict

    assert verdict(b, P).runnable and not verdict(b, "adk").runnable


def test_agent_as_tool_and_structured_output(emu):
    r = go(emu, "desk", "Can I get my money back quickly?", P)
    assert r.result.final_output == "The expert says: Refunds reach the card within 5 days."
    (handoff,) = r.of("handoff")
    assert handoff.kind == "agent_as_tool" and handoff.to_agent == "faq_expert"
    r = go(emu, "structured", "Summarise ORD-7 as JSON.", P)
    assert r.result.final_output == {"order_id": "ORD-7", "status": "delivered"} and r.result.output_valid
    fmt = r.requests[0]["body"]["text"]["format"]  # Responses API: response_format as text.format
    assert fmt["type"] == "json_schema" and fmt["schema"] == bundle("structured").node.spec.output_schema


def test_errors_and_bad_model_choice(emu):
    r = go(emu, "desk", "Break the server.", P)
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error")
    assert "500" in r.result.error
    b = bundle()
    bad = with_spec(b, models=b.spec.models.model_copy(update={"langgraph": "mistral:large"}))
    with pytest.raises(UsageError, match="models.langgraph 'mistral:large'"):
        go(emu, bad, "Are you open?", P)


# --- the CLI: run, record → replay offline ---------------------------------------------------------


def test_cli_run_record_and_replay(tmp_path):
    agent = EXAMPLES / "support_desk" / "agent.yaml"
    script = EXAMPLES / "support_desk" / "emulator.yaml"
    code, out, err = run_cli(
        "run", str(agent), "--provider", P, "--emulator", str(script), "--input", "How much does case EXP-42 still owe?",
    )  # fmt: skip
    assert code == 0 and "180" in out, err
    old = os.environ.get("PORTAGENT_HOME")
    os.environ["PORTAGENT_HOME"] = str(tmp_path / "home")
    try:
        code, out, err = run_cli(
            "record", str(SUITE), "--emulator", "--out", str(tmp_path / "c"), "--case", "ticket-approved",
            "--case", "budget-stop",
        )  # fmt: skip
    finally:
        if old is not None:
            os.environ["PORTAGENT_HOME"] = old
    assert code == 0 and "2 recorded, 0 skipped, 0 failed" in out and "replays cleanly" in out, err + out
    cassette = (
        tmp_path
        / "c"
        / "support-desk-langgraph"
        / "support_desk@1.0.0"
        / "ticket-approved"
        / P
        / "r0"
        / "cassette.yaml"
    ).read_text()
    assert "/v1/responses" in cassette and "sk-portagent-dummy" not in cassette
    code, out, err = run_cli("port-check", str(DATA / "desk.yaml"), "--to", P, "--json")
    assert code == 0 and json.loads(out)["portable"] is True


@pytest.mark.parametrize("provider", ["anthropic", "langgraph"])
def test_export_writes_a_module_and_import_refuses_what_it_cannot_read(provider, tmp_path):
    """Export and import exist for both runtimes (tests/migration/test_export_new_runtimes.py and
    test_import_new_runtimes.py hold the equivalence proofs); here: the CLI paths from this folder's specs."""
    out = tmp_path / "x.py"
    code, _, err = run_cli("export", str(DATA / "faq_expert.yaml"), "--to", provider, "--out", str(out))
    assert code == 0, err
    compile(out.read_text(encoding="utf-8"), str(out), "exec")
    code, _, err = run_cli(
        "import", "shop_handlers:get_order", "--from", provider, "--out", str(tmp_path / "d")
    )
    assert code == 2 and f"--from {provider} reads" in err and "Traceback" not in err, err
    assert not (tmp_path / "d").exists()


def test_an_emulator_override_for_langgraph_is_refused_by_validate(tmp_path):
    """LangGraph requests reach the emulator as its chat model's wire; a ``providers.langgraph`` override
    would never be played, so it is a mistake with one message."""
    script = tmp_path / "script.yaml"
    script.write_text(
        "kind: emulator-script\nschema_version: 1\nname: x\nconversations:\n"
        "  - name: c\n    turns: [{text: hi}]\n    providers: {langgraph: {turns: [{text: ho}]}}\n"
    )
    code, _, err = run_cli("validate", str(script))
    assert code == 1 and "providers.langgraph" in err and "openai, anthropic or adk" in err
    assert "Traceback" not in err


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_malformed_arguments_get_a_validation_error(emu, vendor, streaming):
    """Cut JSON where a tool call's arguments belong: LangChain keeps such a call apart (an invalid tool
    call) or cannot hold it at all; either way it reaches the gateway, which rejects it, and the model is
    told — as on the other providers — instead of the run ending silently or failing in the SDK."""
    emu.reset()
    r = go(emu, on(vendor), "Send broken arguments.", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "After the broken call: validation_error"
    (res,) = r.of("tool.result")
    assert (res.tool, res.ok, res.error) == ("get_order", False, "validation_error")
    (call,) = r.of("tool.call")
    assert call.provider_details.get("vendor_call_id")  # the model's own call id, answered by that id
    assert handlers.CALLS == {}


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("vendor", list(VENDORS))
def test_an_answer_cut_by_the_token_limit_is_traced_as_length(emu, vendor, streaming):
    """The vendor's own stop value (OpenAI finish_reason / Responses incomplete, Anthropic stop_reason,
    Gemini finishReason) decides model.call's finish_reason, as on the other providers: a truncated answer
    is told apart from a finished one."""
    r = go(emu, on(vendor), "Write a long answer.", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert [c.finish_reason for c in r.of("model.call")] == ["length"]


def test_chat_anthropic_sends_max_tokens_as_the_anthropic_adapter_does(emu):
    """The Messages API requires max_tokens: over ChatAnthropic the spec's value is sent when it has one
    (forced or not) and the same default otherwise — the requests the anthropic adapter sends."""
    from portagent.contracts.capabilities import ANTHROPIC_DEFAULT_MAX_TOKENS

    sent = {}
    for value in (256, None):
        b = on("anthropic")
        b = with_spec(b, models=b.spec.models.model_copy(update={"max_tokens": value}))
        for provider in (P, "anthropic"):
            r = go(emu, b, "Are you open?", provider)
            sent[(value, provider)] = r.requests[-1]["body"]["max_tokens"]
    assert sent == {
        (256, P): 256,
        (256, "anthropic"): 256,
        (None, P): ANTHROPIC_DEFAULT_MAX_TOKENS,
        (None, "anthropic"): ANTHROPIC_DEFAULT_MAX_TOKENS,
    }


@pytest.mark.parametrize("vendor", list(VENDORS))
def test_a_connection_cut_mid_answer_is_a_retryable_provider_error(emu, vendor):
    """The endpoint drops the connection in the middle of its answer: a provider error the eval may
    retry, as on the anthropic and openai providers — not an SDK crash."""
    b = on(vendor)
    r = go(emu, b, "Drop the connection.", P, extra={"anthropic_max_retries": 0})
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error"), r.result.error
    errors = [e for e in r.of("error") if e.error_type == "provider_error"] or r.of("error")
    assert errors and errors[-1].retryable is True


@pytest.mark.parametrize("vendor", list(VENDORS))
def test_a_429_answer_is_traced_on_each_chat_model_vendor(emu, vendor):
    """The emulator answers the first request 429. Whatever the vendor client then does (retry, or fail
    the run), the answer is an ``error`` event in the trace — read from the client's own HTTP hook, as on
    every other provider, not inferred afterwards."""
    emu.reset()
    r = go(emu, on(vendor), "Are you open?", P)
    assert r.requests[0]["status"] == 429
    http = [e for e in r.of("error") if e.error_type.startswith("http_")]
    assert [(e.error_type, e.retryable) for e in http][:1] == [("http_429", True)], r.of("error")


# --- live keys: each chat model's vendor gets its own vendor's key -----------------------------------


def _fingerprint(key: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()[:12]


def test_live_keys_follow_each_chat_models_vendor(tmp_path, monkeypatch):
    """The desk runs on an Anthropic chat model and hands off to a specialist on an OpenAI one. A live run
    needs both vendors' variables, and each vendor's requests carry that vendor's key (the emulator's log
    keeps a fingerprint of the key each request sent) — never the OpenAI key sent to Anthropic."""
    import shutil

    import yaml

    from portagent.emulator import load_script, serve

    data = tmp_path / "data"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__"))
    for name, model in (
        ("desk", "anthropic:claude-sonnet-4-6"),
        ("refunds_specialist", "openai:gpt-4.1-mini"),
    ):
        spec = yaml.safe_load((data / f"{name}.yaml").read_text())
        spec["models"]["langgraph"] = model
        (data / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with serve(load_script(data / "emulator.yaml")) as emu:
        argv = ["run", str(data / "desk.yaml"), "--provider", P, "--live", "--base-url", emu.base_url]
        argv += ["--input", "My parcel ORD-8 never arrived.", "--out", str(tmp_path / "run")]
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-1")
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        code, out, err = run_cli(*argv)
        assert code == 2 and "--live needs ANTHROPIC_API_KEY in the environment" in err, err
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-2")
        monkeypatch.delenv("OPENAI_API_KEY")
        code, out, err = run_cli(*argv)
        assert code == 2 and "--live needs OPENAI_API_KEY in the environment" in err, err
        assert not emu.requests()  # refused before any request
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-1")
        code, out, err = run_cli(*argv)
        assert code == 0, out + err
        sent = {(r["api"], r["credential"]) for r in emu.requests()}
    assert sent == {
        ("anthropic.messages", _fingerprint("sk-ant-test-2")),
        ("openai.responses", _fingerprint("sk-openai-test-1")),
    }


def test_live_key_check_of_an_eval_names_every_vendors_variable(tmp_path, monkeypatch):
    """``eval``/``record --live`` check the keys before anything runs, over every agent version."""
    import yaml

    from portagent.runtime.eval_plan import check_live_keys

    spec = DATA / "structured.yaml"
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-1")
    check_live_keys([P], [spec])  # its chat model is OpenAI's (models.openai): that key is enough
    data = yaml.safe_load(spec.read_text())
    data["models"]["langgraph"] = "anthropic:claude-sonnet-4-6"
    other = tmp_path / "structured.yaml"
    other.write_text(yaml.safe_dump(data, sort_keys=False))
    for f in ("tools.yaml", "policy.yaml", "shop_handlers.py"):
        (tmp_path / f).write_text((DATA / f).read_text())
    with pytest.raises(UsageError, match=r"--live needs ANTHROPIC_API_KEY \(for langgraph\)"):
        check_live_keys([P], [spec, other])


def test_live_base_url_variable_is_the_chat_models_vendors(tmp_path, monkeypatch):
    """An Anthropic chat model reads ANTHROPIC_BASE_URL (the manifest names it), not OpenAI's variable,
    which here points nowhere."""
    import shutil

    import yaml

    from portagent.emulator import load_script, serve

    data = tmp_path / "data"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("desk", "faq_expert", "refunds_specialist"):  # each agent's own model is its own choice
        spec = yaml.safe_load((data / f"{name}.yaml").read_text())
        spec["models"]["langgraph"] = "anthropic:claude-sonnet-4-6"
        (data / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-2")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")
    with serve(load_script(data / "emulator.yaml")) as emu:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.base_url)
        code, out, err = run_cli(
            "run", str(data / "desk.yaml"), "--provider", P, "--live", "--input", "Are you open?",
            "--out", str(tmp_path / "run"),
        )  # fmt: skip
        assert code == 0, out + err
        assert {r["api"] for r in emu.requests()} == {"anthropic.messages"}
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())["manifest"]
    assert manifest["base_url"] == emu.base_url and manifest["source"] == "endpoint"


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
def test_prompt_cache_tokens_and_cost_match_the_anthropic_provider(streaming):
    """The emulator answers with Anthropic's usage breakdown (``cache_creation.ephemeral_5m_input_tokens``,
    as the API does), where langchain-anthropic moves the cache writes out of ``cache_creation``: the
    langgraph trace counts them, and prices the call as the anthropic provider does."""
    from portagent.emulator import load_script, serve

    script = Path(__file__).resolve().parents[1] / "anthropic" / "data" / "script.yaml"
    with serve(load_script(script)) as own:
        lg = go(own, on("anthropic"), "Read ORD-7 from the cache.", P, streaming=streaming)
        own.reset()
        an = go(own, "desk", "Read ORD-7 from the cache.", "anthropic", streaming=streaming)
    mine, theirs = lg.of("model.call")[0], an.of("model.call")[0]
    tokens = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    assert [getattr(mine, t) for t in tokens] == [getattr(theirs, t) for t in tokens]
    assert (mine.cache_read_tokens, mine.cache_write_tokens) == (600, 100)
    assert lg.result.cost_usd == an.result.cost_usd  # the same two calls, priced alike


def test_prepare_imports_the_chat_models_integration_before_the_run():
    """The runner calls ``prepare`` before run.started: langchain-anthropic's import (seconds, the first
    time) is then neither the first model call's latency nor spent from ``budget.timeout_s``."""
    import subprocess

    code = (
        "import sys\n"
        "from portagent.adapters.langgraph.agent import ADAPTER\n"
        "from portagent.contracts.bundle import load_agent\n"
        "from dataclasses import replace\n"
        f"b = load_agent({str(DATA / 'desk.yaml')!r})\n"
        "assert 'langchain_anthropic' not in sys.modules\n"
        "models = b.spec.models.model_copy(update={'langgraph': 'anthropic:claude-sonnet-4-6'})\n"
        "node = replace(b.node, spec=b.spec.model_copy(update={'models': models}))\n"
        "from portagent.contracts.bundle import AgentBundle\n"
        "ADAPTER.prepare(AgentBundle(b.root, {**b.agents, b.root: node}))\n"
        "print('langchain_anthropic' in sys.modules, 'langchain_google_genai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]  # what the spec uses, nothing more


def test_gemini_function_declaration_limits_are_refused_for_a_gemini_chat_model(tmp_path):
    """Tools go to Gemini verbatim: what a Gemini function declaration cannot express (allOf …) is refused
    with its field path, as for adk — only for agents on a Gemini chat model."""
    spec = tmp_path / "a.yaml"
    (tmp_path / "m.py").write_text("def f(a=None):\n    return {}\n")
    head = "kind: agent\nschema_version: 1\nname: a\ninstructions: x\n"
    tools = (
        "tools:\n  - name: get_x\n    description: d\n    effect: read\n    handler: m:f\n"
        "    input_schema: {type: object, properties: {a: {allOf: [{type: string}]}}}\n"
    )
    spec.write_text(head + "models: {langgraph: 'google_genai:gemini-2.5-flash'}\n" + tools)
    code, _, err = run_cli("validate", "--provider", P, str(spec))
    assert code == 1 and "input_schema.properties.a.allOf" in err and "Gemini" in err, err
    spec.write_text(head + "models: {langgraph: 'openai:gpt-4.1-mini'}\n" + tools)
    assert run_cli("validate", "--provider", P, str(spec))[0] == 0


def test_chat_completions_with_tools_and_structured_output(emu):
    """ChatOpenAI's parse path refused every non-strict tool before sending anything when an output schema
    was bound on Chat Completions; the schema now goes in the body's response_format."""
    emu.reset()
    b = bundle("structured")
    spec = with_spec(b, models=b.spec.models.model_copy(update={"openai_api": "chat_completions"}))
    r = go(emu, spec, "Summarise ORD-7 as JSON.", P)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == {"order_id": "ORD-7", "status": "delivered"} and r.result.output_valid
    assert {q["path"] for q in r.requests} == {"/v1/chat/completions"}
    body = r.requests[0]["body"]
    assert body["response_format"]["json_schema"]["schema"] == b.node.spec.output_schema
    assert [t["function"]["name"] for t in body["tools"]] == ["get_order"]


def test_the_openai_api_flag_reaches_langgraphs_openai_chat_model(emu, tmp_path, monkeypatch):
    monkeypatch.setenv("PORTAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    emu.reset()
    before = len(emu.requests())
    code, out, err = run_cli(
        "run", str(DATA / "desk.yaml"), "--provider", P, "--live", "--base-url", emu.base_url,
        "--openai-api", "chat_completions", "--input", "Are you open?", "--out", str(tmp_path / "r"),
    )  # fmt: skip
    assert code == 0, out + err
    assert {q["path"] for q in emu.requests()[before:]} == {"/v1/chat/completions"}


def test_prompt_caching_setting_reaches_an_anthropic_chat_model(emu):
    """The ``anthropic_cache_control`` run option is sent as the anthropic provider sends it (it was
    dropped silently on langgraph)."""
    emu.reset()
    cache = {"type": "ephemeral"}
    r = go(emu, on("anthropic"), "Where is order ORD-7 and how fast do you ship?", P,
           extra={"anthropic_cache_control": cache})  # fmt: skip
    assert r.result.status == "completed", r.result.error
    assert all(q["body"].get("cache_control") == cache for q in r.requests)
