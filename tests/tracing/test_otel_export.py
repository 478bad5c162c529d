"""`trace export` through the official OTLP exporter, decoded with the official protobuf definitions.

The trace comes from a real run: the openai-agents SDK against portagent's emulator, an approval that
defers (attempt 1), is approved, and the same request resumed (attempt 2) — both attempts in one file.
The OTLP "backend" is a plain HTTP server on a free loopback port that keeps every request it gets; what
it received is decoded with ``opentelemetry-proto`` (``ExportTraceServiceRequest``), never with our code.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _support import EXAMPLES, REPO, portagent_home, run_cli

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

SUPPORT = EXAMPLES / "support_desk"
TICKET = "Open a ticket for case EXP-42 about the missing DNI."
KEY = "otel-export:ticket"
PLANTED = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub-token-shaped value planted in a result


class Receiver:
    """A loopback OTLP/HTTP endpoint answering ``status`` and keeping (path, headers, body) of each POST."""

    def __init__(self, status: int = 200, echo: str | None = None) -> None:
        self.status = status
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                payload = b"" if outer.status == 200 else b"unsupported"
                if echo is not None:  # a backend quoting what it refused
                    payload = f"rejected {echo}: {self.headers.get(echo)}".encode()
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def resumed_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real two-attempt trace: defer → approve the card → resume with the same idempotency key."""
    from portagent.adapters.port import Endpoint, RunOptions
    from portagent.contracts.run import RunRequest
    from portagent.emulator import load_script, serve
    from portagent.runtime.runner import RunConfig, arun_full
    from portagent.tools.approvals import ApprovalStore

    base = tmp_path_factory.mktemp("otel")
    sys.path.insert(0, str(SUPPORT))
    with portagent_home(base / "home"), serve(load_script(SUPPORT / "emulator.yaml")) as emu:

        def go() -> Any:
            req = RunRequest(
                input=TICKET, provider="openai", idempotency_key=KEY, scopes=["tickets:write", "email:send"]
            )
            cfg = RunConfig(
                endpoint=Endpoint(base_url=emu.base_url, api_key="sk-test-dummy"),
                approver="defer",
                out_dir=base / "run",
                options=RunOptions(),
            )
            return asyncio.run(arun_full(SUPPORT / "agent.yaml", req, cfg))

        first = go()
        assert first.result.status == "waiting_approval"
        store = ApprovalStore()
        try:
            store.approve(first.result.pending_approvals[0], reviewer="lead")
        finally:
            store.close()
        second = go()
        assert second.result.status == "completed" and second.result.attempt == 2
    return base / "run" / "trace.jsonl"


def _decode(body: bytes) -> list[Any]:
    req = ExportTraceServiceRequest.FromString(body)
    return [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        v = kv.value
        which = v.WhichOneof("value")
        out[kv.key] = (
            [x.string_value for x in v.array_value.values] if which == "array_value" else getattr(v, which)
        )
    return out


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_protobuf_export_decoded_with_the_official_definitions(resumed_trace: Path) -> None:
    events = _events(resumed_trace)
    with Receiver() as rx:
        code, out, err = run_cli(
            "trace",
            "export",
            str(resumed_trace),
            "--otlp-endpoint",
            rx.url,
            "--otlp-header",
            "x-api-key=dummy-1",
        )
    assert code == 0, err
    assert len(rx.requests) == 1  # one POST, nothing more at shutdown
    path, headers, body = rx.requests[0]
    assert path == "/v1/traces" and headers["content-type"] == "application/x-protobuf"
    assert headers["x-api-key"] == "dummy-1"
    spans = _decode(body)
    assert f"exported {len(spans)} spans" in out

    # One trace: the trace's own id on every span.
    assert {s.trace_id.hex() for s in spans} == {events[0]["trace_id"]}
    by_id = {s.span_id: s for s in spans}
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "invoke_agent support_desk"
    ra = _attrs(root)
    assert ra["gen_ai.operation.name"] == "invoke_agent" and ra["gen_ai.provider.name"] == "openai"
    assert ra["portagent.attempts"] == 2 and ra["portagent.status"] == "completed"

    # A span per attempt, under the run's span; each attempt's chat/tool spans under it.
    attempts = sorted(
        (s for s in spans if s.name.startswith("attempt ")), key=lambda s: s.start_time_unix_nano
    )
    assert [s.name for s in attempts] == ["attempt 1", "attempt 2"]
    assert all(s.parent_span_id == root.span_id for s in attempts)
    assert _attrs(attempts[0])["portagent.status"] == "waiting_approval"
    # The resume boundary rides on the second attempt's span, with the journal it replayed.
    (boundary,) = [ev for ev in attempts[1].events if ev.name == "portagent.attempt.started"]
    b = {kv.key: kv.value for kv in boundary.attributes}
    assert b["attempt"].int_value == 2 and b["journal"].string_value == "journal/attempt-1.jsonl"
    chats = [s for s in spans if s.name.startswith("chat ")]
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    model_calls = [e for e in events if e["type"] == "model.call"]
    assert len(chats) == len(model_calls) and len(tools) == sum(e["type"] == "tool.call" for e in events)
    assert {by_id[s.parent_span_id].name for s in chats + tools} == {"attempt 1", "attempt 2"}
    # The recorded span ids are kept (a re-export carries the same ids).
    assert {s.span_id.hex() for s in chats} == {e["span_id"] for e in model_calls}

    # GenAI conventions: chat usage and cost (none on an exchange replayed from the journal: it is on
    # the first attempt's span); totals on the agent span are the run's, the sum of its chats.
    for s in chats:
        a = _attrs(s)
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"]
        assert a.get("portagent.replayed") or (
            a["gen_ai.usage.input_tokens"] > 0 and "portagent.cost_usd" in a
        )
        assert s.kind == s.SPAN_KIND_CLIENT
    usage = [_attrs(s) for s in chats]
    assert ra["gen_ai.usage.input_tokens"] == sum(a.get("gen_ai.usage.input_tokens", 0) for a in usage)
    assert ra["gen_ai.usage.output_tokens"] == sum(a.get("gen_ai.usage.output_tokens", 0) for a in usage)
    done = [e for e in events if e["type"] == "run.completed"]
    assert ra["portagent.cost_usd"] == pytest.approx(done[-1]["cost_usd"])
    ticket = [s for s in tools if s.name == "execute_tool create_ticket"]
    assert len(ticket) == 2  # deferred in attempt 1, run in attempt 2
    first_try, second_try = sorted(ticket, key=lambda s: s.start_time_unix_nano)
    assert _attrs(first_try)["gen_ai.tool.name"] == "create_ticket"
    assert first_try.status.code == first_try.status.STATUS_CODE_ERROR
    assert first_try.status.message == "approval_required"
    assert "portagent.approval.requested" in [e.name for e in first_try.events]
    assert second_try.status.code != second_try.status.STATUS_CODE_ERROR
    # Content is opt-in: none of it without --include-content.
    assert not any(
        k in _attrs(s)
        for s in spans
        for k in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages")
    )


def test_include_content_exports_inputs_outputs_and_masks_secrets(
    resumed_trace: Path, tmp_path: Path
) -> None:
    # A trace from elsewhere (e.g. `trace import`) may carry a secret in a tool result.
    rows = _events(resumed_trace)
    for r in rows:
        if r["type"] == "tool.result" and r.get("ok"):
            r["output"] = {"note": f"token {PLANTED} here", "ticket": r["output"]}
    planted = tmp_path / "trace.jsonl"
    planted.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with Receiver() as rx:
        code, _, err = run_cli(
            "trace", "export", str(planted), "--otlp-endpoint", rx.url, "--include-content"
        )
    assert code == 0, err
    spans = _decode(rx.requests[0][2])
    assert PLANTED.encode() not in rx.requests[0][2]
    root = next(s for s in spans if not s.parent_span_id)
    ra = _attrs(root)
    assert json.loads(ra["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": TICKET}]}
    ]
    final = next(r for r in reversed(rows) if r["type"] == "run.completed")["final_output"]
    (out_msg,) = json.loads(ra["gen_ai.output.messages"])
    assert out_msg["role"] == "assistant" and out_msg["parts"][0]["content"] == final
    done = [
        s
        for s in spans
        if s.name == "execute_tool create_ticket" and s.status.code != s.status.STATUS_CODE_ERROR
    ]
    a = _attrs(done[0])
    assert json.loads(a["gen_ai.tool.call.arguments"])["case_id"] == "EXP-42"
    result = json.loads(a["gen_ai.tool.call.result"])
    assert "[REDACTED" in result["note"] and PLANTED not in result["note"]


def test_otlp_json_file_keeps_status_messages_and_uses_hex_ids(resumed_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "spans.json"
    code, stdout, err = run_cli("trace", "export", str(resumed_trace), "--otel-json", str(out))
    assert code == 0, err
    data = json.loads(out.read_text())
    spans = [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert f"exported {len(spans)} spans to {out}" in stdout
    trace_id = _events(resumed_trace)[0]["trace_id"]
    assert {s["traceId"] for s in spans} == {trace_id}
    denied = [s for s in spans if s["status"].get("code") == 2]
    assert denied and all(s["status"]["message"] for s in denied)
    assert "approval_required" in {s["status"]["message"] for s in denied}
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("status", [415, 500])
def test_endpoint_refusing_is_one_message_exit_3(resumed_trace: Path, status: int) -> None:
    with Receiver(status=status) as rx:
        t0 = time.monotonic()
        code, out, err = run_cli(
            "trace", "export", str(resumed_trace), "--otlp-endpoint", rx.url, "--otlp-timeout", "1"
        )
        took = time.monotonic() - t0
        sent = len(rx.requests)
        time.sleep(0.3)
        assert len(rx.requests) == sent  # nothing more once the command has answered
    assert code == 3 and out == ""
    assert f"HTTP {status}" in err and f"{rx.url}/v1/traces" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    # 415 is final: one POST. 5xx is transient: the exporter retries inside --otlp-timeout, never after.
    assert (sent == 1 if status == 415 else 1 <= sent <= 2) and took < 5


def test_the_endpoint_keeps_its_query_and_the_message_masks_credentials(resumed_trace: Path) -> None:
    """``/v1/traces`` goes on the path (a query stays a query); a refusal's message masks the URL's
    userinfo and the ``--otlp-header`` value a backend echoed back."""
    token = "Bearer otlp-tok-9f8e7d6c5b4a3210"
    with Receiver(status=401, echo="authorization") as rx:
        endpoint = rx.url.replace("http://", "http://ops:s3cr3t-Pa55w0rd@") + "/?tenant=acme"
        code, out, err = run_cli(
            "trace", "export", str(resumed_trace), "--otlp-endpoint", endpoint,
            "--otlp-header", f"Authorization={token}", "--otlp-timeout", "1",
        )  # fmt: skip
    assert code == 3 and "HTTP 401" in err, err
    assert [path for path, _, _ in rx.requests][:1] == ["/v1/traces?tenant=acme"]
    assert "s3cr3t-Pa55w0rd" not in err and "otlp-tok-9f8e7d6c5b4a3210" not in err, err
    assert "[REDACTED" in err and "tenant=acme" in err
    with Receiver(status=401, echo="authorization") as rx:  # no userinfo: the header is what is sent
        code, out, err = run_cli(
            "trace", "export", str(resumed_trace), "--otlp-endpoint", rx.url,
            "--otlp-header", f"Authorization={token}", "--otlp-timeout", "1",
        )  # fmt: skip
    assert code == 3 and rx.requests[0][1]["authorization"] == token
    assert "rejected authorization" in err and "otlp-tok-9f8e7d6c5b4a3210" not in err, err


def test_closed_port_is_one_message_exit_3(resumed_trace: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    code, out, err = run_cli(
        "trace", "export", str(resumed_trace), "--otlp-endpoint", url, "--otlp-timeout", "1"
    )
    assert code == 3 and out == ""
    assert "connection refused" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_failure_in_a_real_process_posts_once_and_prints_no_traceback(resumed_trace: Path) -> None:
    """No exit hook sends a second time, no logger prints a stack (a subprocess, as a user runs it)."""
    with Receiver(status=415) as rx:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "portagent",
                "trace",
                "export",
                str(resumed_trace),
                "--otlp-endpoint",
                rx.url,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        time.sleep(0.2)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and "HTTP 415" in proc.stderr
    assert len(rx.requests) == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--otlp-endpoint", "http://127.0.0.1:1", "--otlp-header", "no-equals-sign"], "expected NAME=VALUE"),
        (["--otlp-endpoint", "127.0.0.1:4318"], "expected an http:// or https:// URL"),
        (["--otel-json", "x.json", "--otlp-header", "a=b"], "--otlp-header goes with --otlp-endpoint"),
        (["--otlp-endpoint", "http://127.0.0.1:1", "--otlp-timeout", "0"], "--otlp-timeout"),
    ],
)
def test_bad_export_options_are_usage_errors(resumed_trace: Path, argv: list[str], message: str) -> None:
    code, _, err = run_cli("trace", "export", str(resumed_trace), *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_grpc_without_its_package_is_one_usage_message(
    resumed_trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message names the option and the extra (not a 'provider'); nothing is sent, exit 2."""
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    with Receiver() as rx:
        code, out, err = run_cli(
            "trace", "export", str(resumed_trace), "--otlp-endpoint", rx.url, "--otlp-protocol", "grpc"
        )
    assert code == 2 and out == "" and "Traceback" not in err and "provider" not in err
    assert "--otlp-protocol grpc needs the 'opentelemetry-exporter-otlp-proto-grpc' package" in err
    assert "pip install 'portagent[otel-grpc]'" in err and rx.requests == []


def test_an_empty_trace_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "trace.jsonl"
    empty.write_text("")
    code, _, err = run_cli("trace", "export", str(empty), "--otel-json", str(tmp_path / "o.json"))
    assert code == 2 and "no trace events" in err and not (tmp_path / "o.json").exists()


def test_unwritable_json_path_leaves_nothing(resumed_trace: Path, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    target = tmp_path / "afile" / "spans.json"  # a file where the folder goes
    code, _, err = run_cli("trace", "export", str(resumed_trace), "--otel-json", str(target))
    assert code == 2 and f"{target}: cannot write it ({tmp_path / 'afile'} is not a folder)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    code, _, err = run_cli(
        "trace", "export", str(resumed_trace), "--otel-json", str(tmp_path / "new" / "o.json")
    )
    assert code == 0 and (tmp_path / "new" / "o.json").is_file()  # a missing folder is made, as for --out


@pytest.mark.skipif(
    not os.environ.get("PORTAGENT_TEST_OTLP_ENDPOINT"),
    reason="set PORTAGENT_TEST_OTLP_ENDPOINT (e.g. a local Arize Phoenix, http://127.0.0.1:6006) to try a real backend",
)
def test_a_real_backend_accepts_the_export(resumed_trace: Path) -> None:
    endpoint = os.environ["PORTAGENT_TEST_OTLP_ENDPOINT"]
    headers = [h for h in os.environ.get("PORTAGENT_TEST_OTLP_HEADERS", "").split(",") if h]
    argv = [x for h in headers for x in ("--otlp-header", h)]
    code, out, err = run_cli("trace", "export", str(resumed_trace), "--otlp-endpoint", endpoint, *argv)
    assert code == 0, err
    assert "exported" in out
