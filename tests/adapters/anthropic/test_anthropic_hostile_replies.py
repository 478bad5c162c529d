"""The anthropic adapter against replies a well-behaved model does not send: a reply that holds tool calls
but did not stop for them, a reply cut off in transfer, undeclared tools among declared ones; and the
settings the SDK itself refuses or misroutes (a large ``max_tokens`` unstreamed, a base URL ending in /v1).

Real SDK, real gateway, no mocks: the emulator plays the replies (``data/script.yaml``), and its request log
shows what the SDK sent. One test serves its replies from a loopback server of its own: the emulator has no
``pause_turn`` or unknown stop reasons to send.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="anthropic is not installed (pip install 'portagent[anthropic]')")
from _support import run_cli
from runtime_testkit import (
    bundle,
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    go,
    handlers,
    with_budget,
)

from portagent.contracts.bundle import load_agent
from portagent.emulator import RunningEmulator, load_script, serve

HERE = Path(__file__).resolve().parent
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["unary", "sse"])
P = "anthropic"
NO_RETRY = {"anthropic_max_retries": 0}


@pytest.fixture(scope="module")
def own_emu() -> Iterator[RunningEmulator]:
    with serve(load_script(HERE / "data" / "script.yaml")) as running:
        yield running


# --- 1. tools run only on stop_reason tool_use --------------------------------------------------------


@STREAMING
@pytest.mark.parametrize(
    ("text", "final", "finish"),
    [
        ("Cut the answer in the middle of a call.", "This answer was cut", "length"),
        ("Refuse while calling a tool.", "I can't help with that.", "content_filter"),
    ],
    ids=["max_tokens", "refusal"],
)
def test_a_reply_that_did_not_stop_for_tools_runs_none(own_emu, streaming, text, final, finish):
    """The reply carries a tool_use block but ended with max_tokens (its input may be cut short) or refusal:
    no tool runs, no second request is sent, the run completes with the text so far, as an answer cut by its
    token limit does on every provider; the model call says why it ended."""
    r = go(own_emu, "desk", text, P, streaming=streaming)
    (request,) = r.requests  # one request: the runner was not asked for the tool results
    assert [c["name"] for c in request["reply"]["tool_calls"]] == ["get_order"]  # the hostile reply
    assert (r.result.status, r.result.stop_reason) == ("completed", "final_output"), r.result.error
    assert r.result.final_output == final
    assert r.of("tool.call") == [] and r.of("tool.result") == [] and handlers.CALLS == {}
    assert [c.finish_reason for c in r.of("model.call")] == [finish]


def test_a_later_user_message_does_not_carry_the_unrun_tool_call(own_emu):
    """Another user message continues the conversation: the cut reply's text goes with it, its unrun
    tool_use block does not (the API refuses a tool_use that no tool_result follows)."""
    r = go(own_emu, "desk", ["Cut the answer in the middle of a call.", "Go on."], P)
    assert r.result.status == "completed", r.result.error
    assert len(r.requests) == 2 and handlers.CALLS == {}
    assert r.requests[1]["body"]["messages"] == [
        {"role": "user", "content": "Cut the answer in the middle of a call."},
        {"role": "assistant", "content": [{"type": "text", "text": "This answer was cut"}]},
        {"role": "user", "content": "Go on."},
    ]


class _Canned:
    """A loopback Messages endpoint answering each POST with the next canned reply (JSON, unstreamed)."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.log: list[dict[str, Any]] = []
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None: ...

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                canned.log.append({"path": self.path, "body": body})
                data = json.dumps(canned.replies.pop(0)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests(self) -> list[dict[str, Any]]:
        return list(self.log)


def _message(n: int, stop_reason: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
        "content": list(blocks), "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip


TEXT = {"type": "text", "text": "Looking it up"}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"order_id": "ORD-7"}}


@pytest.mark.parametrize(
    ("replies", "requests", "finishes"),
    [
        # pause_turn: the runner sends the turn back as it is (a second request), running nothing
        (
            [
                _message(1, "pause_turn", TEXT, CALL),
                _message(2, "end_turn", {"type": "text", "text": "Done."}),
            ],
            2,
            ["other", "stop"],
        ),
        # a stop reason this SDK does not know yet: the turn ends
        ([_message(1, "some_future_reason", TEXT, CALL)], 1, ["other"]),
    ],
    ids=["pause_turn", "unknown_stop_reason"],
)
def test_other_stop_reasons_run_no_tool(replies, requests, finishes):
    canned = _Canned(replies)
    thread = threading.Thread(target=canned.server.serve_forever, daemon=True)
    thread.start()
    try:
        r = go(canned, "desk", "Where is ORD-7?", P, base_url=canned.base_url, extra=NO_RETRY)
    finally:
        canned.server.shutdown()
        canned.server.server_close()
    assert r.result.status == "completed", r.result.error
    assert r.of("tool.call") == [] and handlers.CALLS == {}
    assert len(r.requests) == requests and [c.finish_reason for c in r.of("model.call")] == finishes
    if requests == 2:  # the paused turn went back unchanged, with no tool_result after it
        assert r.requests[1]["body"]["messages"][-1] == {"role": "assistant", "content": [TEXT, CALL]}


# --- 2 and 4. a reply cut off in transfer, transport errors --------------------------------------------


@pytest.mark.parametrize(
    ("text", "streaming"),
    [
        ("End the stream without message_stop.", True),  # the body ends properly, its last events missing
        ("Drop the connection mid-reply.", True),  # httpx2.RemoteProtocolError from the SDK's stream iterator
        ("Drop the connection mid-reply.", False),  # a JSON body shorter than its Content-Length
    ],
    ids=["sse-clean-end", "sse-dropped", "unary-short-body"],
)
def test_a_reply_cut_off_in_transfer_fails_as_a_retryable_provider_error(own_emu, text, streaming):
    """Not a completed run holding part of the text, not an SDK crash: the eval may retry it."""
    r = go(own_emu, "desk", text, P, streaming=streaming, extra=NO_RETRY)
    assert len(r.requests) == 1 and r.requests[0]["fault"]  # the emulator did cut it
    assert (r.result.status, r.result.stop_reason) == ("failed", "provider_error"), r.result.error
    assert r.result.final_output is None and r.of("model.call") == []
    assert f"cannot reach the Anthropic endpoint {own_emu.base_url}, or it dropped the connection" in (
        r.result.error
    )
    assert "Traceback" not in r.result.error
    (error,) = r.of("error")
    assert (error.error_type, error.retryable) == ("ProviderError", True)


# --- 3. undeclared tools keep the model's order ----------------------------------------------------------

MIXED = "Call a declared tool, an undeclared one, then another declared one."


@STREAMING
def test_undeclared_tool_calls_keep_the_models_order(own_emu, streaming):
    """get_order, launch_rocket (declared nowhere), search_faq: the trace, the call ids and the results sent
    back follow the reply's order; the runner answers launch_rocket itself."""
    r = go(own_emu, "desk", MIXED, P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    order = ["get_order", "launch_rocket", "search_faq"]
    assert [c.tool for c in r.of("tool.call")] == order
    assert [x.tool for x in r.of("tool.result")] == order
    assert [x.error for x in r.of("tool.result")] == [None, "unknown_tool", None]
    assert [c.provider_details["vendor_call_id"] for c in r.of("tool.call")] == [
        f"toolu_emu_mixed_unknown_0_{i}" for i in range(3)
    ]
    kinds = [e.type for e in r.events if e.type in ("tool.call", "tool.result")]
    assert kinds == ["tool.call", "tool.result"] * 3  # each call finished before the next one starts
    sent = r.requests[-1]["body"]["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in sent] == [f"toolu_emu_mixed_unknown_0_{i}" for i in range(3)]


def test_the_tool_call_budget_counts_in_the_models_order(own_emu):
    """max_tool_calls: 1: the first call (get_order) runs, the undeclared second one meets the budget."""
    r = go(own_emu, with_budget(bundle(), max_tool_calls=1), MIXED, P)
    assert (r.result.status, r.result.stop_reason) == ("budget_exhausted", "max_tool_calls")
    assert handlers.CALLS == {"get_order": 1} and len(r.requests) == 1
    assert [c.tool for c in r.of("tool.call")][:2] == ["get_order", "launch_rocket"]


# --- 5. a large max_tokens, unstreamed ---------------------------------------------------------------------

LONG = "Answer with a large max_tokens."


def _long_spec(tmp: Path) -> Path:
    spec = tmp / "long_writer.yaml"
    spec.write_text(
        "kind: agent\nschema_version: 1\nname: long_writer\nversion: 1.0.0\n"
        "instructions: Write long answers.\nmodels: {claude: claude-sonnet-4-6, max_tokens: 64000}\n",
        encoding="utf-8",
    )
    return spec


@STREAMING
def test_a_large_max_tokens_runs_unstreamed_too(own_emu, tmp_path, streaming):
    """max_tokens 64000: the SDK refuses an unstreamed request it expects to take over 10 minutes unless
    it is given a timeout ("Streaming is required…", before anything is sent). The adapter gives one."""
    spec = _long_spec(tmp_path)
    code, _, err = run_cli("validate", "--provider", P, str(spec))
    assert code == 0, err  # validate calls it runnable: the run must agree
    r = go(own_emu, load_agent(spec), LONG, P, streaming=streaming)
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "A long answer is allowed."
    (request,) = r.requests
    assert request["body"]["max_tokens"] == 64000 and bool(request["body"].get("stream")) is streaming


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("suffix", ["", "/v1", "/v1/"])
def test_the_exported_program_runs_a_large_max_tokens(own_emu, tmp_path, suffix):
    """The exported program's messages.create has the same explicit timeout (and takes a …/v1 base URL)."""
    import asyncio

    out = tmp_path / "long_writer_anthropic.py"
    code, _, err = run_cli("export", str(_long_spec(tmp_path)), "--to", P, "--out", str(out))
    assert code == 0, err
    before = len(own_emu.requests())
    done = asyncio.run(
        _load(out).main([LONG], base_url=own_emu.base_url + suffix, api_key="sk-ant-dummy", source="emulator")
    )
    assert done["status"] == "completed" and done["final_output"] == "A long answer is allowed.", done
    (request,) = own_emu.requests()[before:]
    assert (request["path"], request["body"]["max_tokens"]) == ("/v1/messages", 64000)


# --- 6. a base URL given as …/v1 ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["/", "/v1", "/v1/"])
def test_a_base_url_ending_in_v1_reaches_v1_messages_once(own_emu, suffix):
    """``portagent emulate`` prints OPENAI_BASE_URL as …/v1; the anthropic SDK adds /v1/messages itself."""
    r = go(own_emu, "desk", LONG, P, base_url=own_emu.base_url + suffix)
    assert r.result.status == "completed", r.result.error
    assert [q["path"] for q in r.requests] == ["/v1/messages"]


@pytest.mark.parametrize("via", ["--base-url", "ANTHROPIC_BASE_URL"])
def test_the_cli_takes_a_v1_base_url_for_a_live_anthropic_run(own_emu, tmp_path, monkeypatch, via):
    """Through the CLI and the run journal's proxy (a run folder), given the URL or the variable."""
    from _support import EXAMPLES

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dummy")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    url = own_emu.base_url + "/v1"
    argv = ["run", str(EXAMPLES / "support_desk" / "agent.yaml"), "--provider", P, "--input", LONG, "--live"]
    if via == "--base-url":
        argv += ["--base-url", url]
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    before = len(own_emu.requests())
    code, _, err = run_cli(*argv, "--out", str(tmp_path / "run"))
    assert code == 0, err
    assert [q["path"] for q in own_emu.requests()[before:]] == ["/v1/messages"]
