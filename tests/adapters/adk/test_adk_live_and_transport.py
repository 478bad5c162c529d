"""The live code path, the pinned HTTP transport and the absence of side traffic (real SDK, emulator)."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

pytest.importorskip("google.adk", reason="google-adk is not installed (pip install 'portagent[adk]')")

from adk_testkit import (
    DATA,
    emulator_fixture,  # noqa: F401  (the "emu" fixture)
    fresh_handlers_fixture,  # noqa: F401  (autouse)
    run,
    run_cli_in_process,
)

SECRET = "AIza-portagent-test-secret-0123456789"
_connects: list[tuple[str, object]] | None = None


def _audit(event: str, args: tuple) -> None:  # installed once; records only while a test asks
    if _connects is not None and event == "socket.connect":
        _connects.append((event, args[1]))


sys.addaudithook(_audit)


def test_live_path_sends_the_key_as_gemini_expects_and_writes_it_nowhere(emu, tmp_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli_in_process(
        "run",
        str(DATA / "desk.yaml"),
        "--provider",
        "adk",
        "--live",
        "--base-url",
        emu.base_url,
        "--input",
        "Where is order ORD-7 and how fast do you ship?",
        "--out",
        str(out),
    )
    assert code == 0, stderr
    assert "status     completed" in stdout
    requests = emu.requests()
    assert len(requests) == 3
    for r in requests:
        assert r["headers"]["x-goog-api-key"] == "<masked>"  # sent, in the header google-genai uses
        assert "key" not in r["query"] and "authorization" not in r["headers"]
    # --live to a local stand-in is labelled honestly: an endpoint, recorded in the manifest (issue 15)
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))["manifest"]
    assert manifest["source"] == "endpoint" and manifest["base_url"] == emu.base_url.rstrip("/")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert out / "trace.jsonl" in written
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"{path} contains the API key"


def test_live_without_key_is_a_usage_error(emu, monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    code, _, stderr = run_cli_in_process(
        "run",
        str(DATA / "desk.yaml"),
        "--provider",
        "adk",
        "--live",
        "--base-url",
        emu.base_url,
        "--input",
        "Are you open?",
    )
    assert code == 2 and "GOOGLE_API_KEY" in stderr
    assert emu.requests() == []


def test_aiohttp_on_the_path_does_not_change_the_transport(emu, monkeypatch):
    """google-genai takes aiohttp for async calls whenever it is importable and no httpx async client
    is given (``_use_aiohttp``). Pretend it is: a default client would switch, the adapter's doesn't
    (aiohttp is not installed here, so a switch would fail the run)."""
    from google import genai
    from google.genai import _api_client, types

    monkeypatch.setattr(_api_client, "has_aiohttp", True)
    default = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=emu.base_url))
    assert default._api_client._use_aiohttp() is True
    r = asyncio.run(run(emu, "desk", ["Hi, I have a question about ORD-7.", "Has it arrived?"]))
    assert r.result.status == "completed", r.result.error
    assert r.result.final_output == "It is delivered."


def test_no_network_besides_the_model_endpoint_and_no_span_export(emu):
    from opentelemetry import trace

    global _connects
    provider_before = trace.get_tracer_provider()
    _connects = []
    try:
        r = asyncio.run(run(emu, "desk", "Can I get my money back quickly?", streaming=True))
    finally:
        seen, _connects = _connects, None
    assert r.result.status == "completed"
    assert seen and {addr for _, addr in seen} == {("127.0.0.1", emu.port)}
    # ADK emits OTel spans through the global provider; the adapter installs none, so they go nowhere
    assert trace.get_tracer_provider() is provider_before


def test_one_tls_context_per_ca_setting(monkeypatch):
    """The CA bundle is loaded once per process (it dominated short runs), from the same sources as
    google-genai: SSL_CERT_FILE / SSL_CERT_DIR, else certifi. (One context for every adapter.)"""
    import certifi

    from portagent.adapters._shared import tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = tls_context()
    assert tls_context() is first
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert tls_context() is first  # same CA file: same context
    monkeypatch.setenv("SSL_CERT_DIR", "/etc/ssl/certs")
    assert tls_context() is not first
