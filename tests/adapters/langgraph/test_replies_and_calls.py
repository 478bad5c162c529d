"""The langgraph adapter on replies that are not plain answers, and on the calls they hold.

Real LangGraph, real LangChain integrations and vendor SDKs, real gateway, against the emulator
(``data/replies.yaml``, the shop agents of the adapter tests); what each vendor was sent is read from the
emulator's request log. One test drives the CLI in a subprocess, where an integration import is blocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'portagent[langgraph]')")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "anthropic"))
from _support import REPO, first_call_cut, portagent_home, run_cli
from runtime_testkit import (
    DATA,
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    results_sent,
    with_spec,
)

from portagent.contracts.bundle import AgentBundle
from portagent.emulator import RunningEmulator, load_script, serve

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "data" / "replies.yaml"
P = "langgraph"
MODELS = {
    "openai": "openai:gpt-4.1-mini",  # the Responses API
    "openai_chat": "openai:gpt-4.1-mini",  # models.openai_api: chat_completions
    "anthropic": "anthropic:claude-sonnet-4-6",
    "google_genai": "google_genai:gemini-2.5-flash",
}
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])


def on(vendor: str, b: AgentBundle | None = None, agent: str | None = None) -> AgentBundle:
    """The bundle (the desk, handoffs removed) with one agent's chat model on ``vendor``."""
    b = b or bundle()
    name = agent or b.root
    models = b.agents[name].spec.models.model_copy(update={"langgraph": MODELS[vendor]})
    if vendor == "openai_chat":
        models = models.model_copy(update={"openai_api": "chat_completions"})
    return with_spec(b, name, models=models)


@pytest.fixture(name="emu", scope="module")
def replies_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT)) as running:
        yield running


# --- a reply cut by the token limit ---------------------------------------------------------------


@STREAMING
@pytest.mark.parametrize("vendor", list(MODELS))
def test_a_reply_cut_by_the_token_limit_runs_none_of_its_calls(emu, vendor, streaming):
    """The reply stops at max tokens in the middle of a refund call (OpenAI ``length`` / Responses
    ``incomplete``, Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``): the run ends with its text, as a cut
    answer does on the other providers, and the call — whose arguments may be cut too — is not run.
    The next user message continues the conversation: the vendor is not shown a call left unanswered."""
    emu.reset()
    r = go(
        emu, on(vendor), ["Refund ORD-7, but run out of tokens.", "Are you there?"], P, streaming=streaming
    )
    assert (r.result.status, r.result.stop_reason) == ("completed", "final_output"), r.result.error
    assert handlers.REFUNDS == [] and not r.of("tool.call")
    first, second = r.of("model.call")
    assert (first.finish_reason, first.provider_details.get("calls_not_run")) == ("length", ["issue_refund"])
    assert second.finish_reason == "stop" and r.result.final_output == "Nothing was refunded."
    assert len(r.requests) == 2
    replayed = r.views()[1]
    assert not [i for i in replayed.items if i.kind in ("tool_call", "tool_result")], replayed.items
    assert "Refunding ORD-7 now." in json.dumps(r.requests[1]["body"])  # the cut answer's text is kept


# --- a stream that ends before its last event ------------------------------------------------------


@pytest.mark.parametrize("vendor", list(MODELS))
def test_a_stream_cut_short_is_a_retryable_provider_error(emu, vendor):
    """The body ends cleanly after two events: no Anthropic ``message_stop``, no OpenAI ``finish_reason`` /
    ``response.completed``, no Gemini ``finishReason``. The vendor clients end such a stream quietly; the
    run fails as a dropped connection does (provider_error, retryable), instead of completing with the
    text so far."""
    r = go(emu, on(vendor), "Answer, but the stream ends early.", P, streaming=True)
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error"), r.result
    assert "ended before its last event" in (r.result.error or "")
    (error,) = r.of("error")
    assert (error.error_type, error.retryable) == ("ProviderError", True)
    assert len(r.requests) == 1 and r.result.final_output is None and not r.of("model.call")


# --- an agent-as-tool call's arguments --------------------------------------------------------------


# (vendor, question): a Gemini call's arguments are an object, so "not JSON" cannot reach the agent tool there
# (google-genai refuses the cut text: test_malformed_gemini_arguments_are_a_provider_error)
BAD_AGENT_TOOL_CALLS = [
    (vendor, question)
    for vendor in ("openai", "anthropic", "google_genai")
    for question in (
        "Ask the expert without a question.",
        "Ask the expert a number.",
        *(() if vendor == "google_genai" else ("Ask the expert with broken arguments.",)),
    )
]


@pytest.mark.parametrize(("vendor", "question"), BAD_AGENT_TOOL_CALLS)
def test_an_agent_tool_call_with_bad_arguments_is_answered_not_run(emu, vendor, question):
    """The faq_expert sub-agent takes ``{"input": string}``. Called without it (or with a number, or with
    text that is not JSON) it is not run on an empty task: the model gets validation_error naming the
    field, the way the gateway answers a tool's bad arguments, and the run goes on."""
    r = go(emu, on(vendor), question, P)
    assert r.result.status == "completed", r.result.error
    broken = "broken" in question
    assert r.result.final_output == (
        "Expert: validation_error" if broken else "Expert: validation_error at input"
    )
    assert not r.of("handoff")  # the sub-agent never ran
    assert len(r.requests) == 2  # the desk's two calls; none by the expert
    ((name, sent),) = results_sent(r)
    assert name == "faq_expert" and sent["ok"] is False and sent["error"] == "validation_error"


@STREAMING
def test_malformed_gemini_arguments_are_a_provider_error(emu, streaming):
    """Gemini sends a call's arguments as an object; text there (the emulator's malformed_arguments fault)
    fails google-genai's response model. As on adk, a provider error, said plainly — not sdk_error with
    pydantic's raw report."""
    r = go(emu, on("google_genai"), "Search with broken arguments.", P, streaming=streaming)
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error"), r.result
    error = r.result.error or ""
    assert error.startswith("the Gemini answer could not be read: candidates.0.content.parts.0"), error
    assert "functionCall.args" in error and "pydantic" not in error and "\n" not in error
    assert handlers.CALLS == {}


# --- calls whose arguments are not JSON -------------------------------------------------------------


@STREAMING
@pytest.mark.parametrize("vendor", ["openai", "openai_chat", "anthropic"])
def test_cut_arguments_are_never_run_as_what_was_left(emu, vendor, streaming):
    """``{"query":"shi`` is not a call to search for "shi": streamed, LangChain reads a call's text as
    partial JSON and would run it; it is an invalid call, answered with validation_error."""
    r = go(emu, on(vendor), "Search with broken arguments.", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "After the broken search: validation_error"
    assert handlers.CALLS == {}
    (result,) = r.of("tool.result")
    assert (result.tool, result.error) == ("search_faq", "validation_error")


@pytest.fixture(name="first_cut", scope="module")
def first_cut_fixture() -> Iterator[RunningEmulator]:
    with serve(load_script(SCRIPT), engine=first_call_cut()) as running:
        yield running


@STREAMING
@pytest.mark.parametrize("vendor", ["openai", "openai_chat", "anthropic"])
def test_a_broken_call_and_a_good_one_are_answered_in_the_models_order(first_cut, vendor, streaming):
    """One reply, two calls: the first's arguments are cut, the second's are whole. LangChain keeps the
    broken one apart (``invalid_tool_calls``); the calls are still answered in the model's order — in the
    trace and in what the vendor is sent back."""
    r = go(first_cut, on(vendor), "Send one broken call, then a good one.", P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "Answers: validation_error, then Orders ship within 2 working days."
    assert [(c.tool, c.provider_details["vendor_call_id"][-2:]) for c in r.of("tool.call")] == [
        ("get_order", "_0"),
        ("search_faq", "_1"),
    ]
    assert [name for name, _ in results_sent(r)] == ["get_order", "search_faq"]
    assert handlers.CALLS == {"search_faq": 1}


# --- Gemini's call ids ------------------------------------------------------------------------------


def _gemini_desk_and_openai_specialist(tmp_path: Path) -> Path:
    """The shop's agents in ``tmp_path``: the desk on a Gemini chat model, its refunds specialist on an
    OpenAI one."""
    import shutil

    import yaml

    data = tmp_path / "data"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__"))
    for name, model in (("desk", MODELS["google_genai"]), ("refunds_specialist", MODELS["openai"])):
        spec = yaml.safe_load((data / f"{name}.yaml").read_text())
        spec["models"]["langgraph"] = model
        (data / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return data


def test_a_gemini_to_openai_handoff_sends_the_same_bytes_every_run(tmp_path):
    """langchain-google-genai invents a random id for each Gemini call; after a handoff that id is in the
    OpenAI request's body. The ids are the run's own now (model call, index): two runs send the same bytes."""
    data = _gemini_desk_and_openai_specialist(tmp_path)
    from portagent.contracts.bundle import load_agent

    bodies = []
    with serve(load_script(data / "emulator.yaml")) as emu:
        for _ in range(2):
            r = go(emu, load_agent(data / "desk.yaml"), "My parcel ORD-8 never arrived.", P)
            assert r.result.status == "completed", r.result.error
            assert [q["api"] for q in r.requests][:2] == ["gemini.generate_content", "openai.responses"]
            bodies.append([json.dumps(q["body"], sort_keys=True) for q in r.requests])
    assert bodies[0] == bodies[1]
    assert '"call_id": "call_1_0"' in bodies[0][1]  # the handoff call, as the OpenAI request carries it


def test_a_gemini_to_openai_handoff_records_and_replays(tmp_path):
    """``record`` replays what it recorded (vcrpy, request bodies matched): it failed as cassette drift on the
    Gemini call id in the OpenAI request."""
    data = _gemini_desk_and_openai_specialist(tmp_path)
    (data / "suite.yaml").write_text(
        "kind: suite\nschema_version: 1\nsuite_id: gemini-openai-handoff\ndataset_version: '1'\nowner: tests\n"
        "agent: desk.yaml\nproviders: [langgraph]\nrepeats: 1\nemulator_script: emulator.yaml\n"
        "thresholds: {final: 1.0, trajectory: 0.0, trace: 0.0}\n"
        "cases:\n  - case_id: lost-parcel\n    input: My parcel ORD-8 never arrived.\n    why_it_exists: a handoff\n"
        "    expect: {final_must_contain: [ORD-8]}\n"
    )
    with portagent_home(tmp_path / "home"):
        code, out, err = run_cli(
            "record", str(data / "suite.yaml"), "--emulator", "--out", str(tmp_path / "c")
        )
    assert code == 0 and "1 recorded, 0 skipped, 0 failed" in out and "replays cleanly" in out, out + err


# --- each agent's own model -------------------------------------------------------------------------


def test_a_sub_agents_own_model_wins_over_the_roots_choice():
    """The desk names ``anthropic:`` for langgraph; its refunds specialist names only its own OpenAI model,
    which it runs (as ``RunSession.model_for`` chooses on every provider); an agent naming no model for
    langgraph at all runs the root's. Read from which model each request carried."""
    b = on("anthropic", bundle(handoffs=True))
    specialist = b.agents["refunds_specialist"].spec.models
    assert specialist.langgraph is None and specialist.openai == "gpt-4.1-mini"
    with serve(load_script(DATA / "emulator.yaml")) as emu:
        r = go(emu, b, "My parcel ORD-8 never arrived.", P)
        assert r.result.status == "completed", r.result.error
        assert [(q["api"], q["body"]["model"]) for q in r.requests] == [
            ("anthropic.messages", "claude-sonnet-4-6"),
            ("openai.responses", "gpt-4.1-mini"),
            ("openai.responses", "gpt-4.1-mini"),
        ]
        assert [c.model for c in r.of("model.call")] == ["claude-sonnet-4-6", "gpt-4.1-mini", "gpt-4.1-mini"]
        # its own langgraph choice, another vendor
        gemini = on("google_genai", b, "refunds_specialist")
        r = go(emu, gemini, "My parcel ORD-8 never arrived.", P)
        assert [q["api"] for q in r.requests] == ["anthropic.messages", *["gemini.generate_content"] * 2]
        assert all("gemini-2.5-flash" in q["path"] for q in r.requests[1:])
        # no model for langgraph (nor openai): the root's choice
        bare = with_spec(b, "refunds_specialist", models=specialist.model_copy(update={"openai": None}))
        r = go(emu, bare, "My parcel ORD-8 never arrived.", P)
        assert [q["api"] for q in r.requests] == ["anthropic.messages"] * 3


# --- a missing integration --------------------------------------------------------------------------


def test_a_missing_integration_is_the_extras_install_line(tmp_path):
    """``langgraph`` is installed but ``langchain_anthropic`` cannot be imported (a sitecustomize blocks it):
    ``portagent run`` says which package and extra to install, exit 2, no traceback."""
    import yaml

    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text('import sys\nsys.modules["langchain_anthropic"] = None\n')
    spec = yaml.safe_load((DATA / "structured.yaml").read_text())
    spec["models"]["langgraph"] = MODELS["anthropic"]
    for f in ("tools.yaml", "policy.yaml", "shop_handlers.py", "emulator.yaml"):
        (tmp_path / f).write_text((DATA / f).read_text())
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(blocker), str(REPO)]),
        "PORTAGENT_HOME": str(tmp_path / "h"),
    }
    argv = [
        "run",
        "agent.yaml",
        "--provider",
        P,
        "--emulator",
        "emulator.yaml",
        "--input",
        "Summarise ORD-7 as JSON.",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "portagent", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "'langchain-anthropic'" in done.stderr and "pip install 'portagent[langgraph]'" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr


# --- base URLs given as …/v1 ------------------------------------------------------------------------

PATHS = {
    "openai": "/v1/responses",
    "anthropic": "/v1/messages",
    "google_genai": "/v1beta/models/gemini-2.5-flash:generateContent",
}


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/"])
@pytest.mark.parametrize("vendor", list(PATHS))
def test_a_base_url_ending_in_v1_reaches_each_vendors_path_once(tmp_path, monkeypatch, vendor, suffix):
    """``--base-url http://host:port/v1`` (what ``portagent emulate`` prints for OpenAI) is the server root
    for every chat model, through the run journal: never ``/v1/v1/…``."""
    import shutil

    import yaml

    data = tmp_path / "data"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("__pycache__"))
    spec = yaml.safe_load((data / "structured.yaml").read_text())
    spec["models"]["langgraph"] = MODELS[vendor]
    (data / "structured.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(var, "sk-test-dummy")
    with serve(load_script(data / "emulator.yaml")) as emu, portagent_home(tmp_path / "home"):
        code, out, err = run_cli(
            "run", str(data / "structured.yaml"), "--provider", P, "--live", "--base-url", emu.base_url + suffix,
            "--input", "Summarise ORD-7 as JSON.", "--out", str(tmp_path / "run"),
        )  # fmt: skip
        assert code == 0, out + err
        assert {q["path"] for q in emu.requests()} == {PATHS[vendor]}
