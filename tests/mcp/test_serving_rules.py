"""One rule for exposing a server (core/serving.py), used by ``mcp serve``, ``a2a serve`` and the replay
guard: what is loopback, which binds need a token, which tokens are too weak, which requests carry one,
which Host/Origin allowlist entries a user may add, and which requests the allowlist refuses."""

from __future__ import annotations

import asyncio

import pytest

from portagent.a2a.server import check_bind as a2a_check_bind
from portagent.contracts.errors import UsageError
from portagent.core.serving import allowed_host, allowed_origin, allowlist, bearer_ok, is_loopback
from portagent.mcp.server import check_bind as mcp_check_bind


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"]
)
def test_loopback_forms(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "192.0.2.10", "::ffff:192.0.2.10", "example.com", "", None]
)
def test_not_loopback(host: str | None) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("check", [a2a_check_bind, mcp_check_bind])
def test_both_servers_refuse_the_same_binds_and_tokens(check) -> None:  # type: ignore[no-untyped-def]
    check("127.0.0.1", [])  # loopback without a token: fine
    check("0.0.0.0", ["x" * 16])
    for host, tokens in (("0.0.0.0", []), ("192.0.2.10", []), ("127.0.0.1", ["short"]), ("::1", ["a b" * 8])):
        with pytest.raises(UsageError):
            check(host, tokens)


def test_bearer_tokens_are_checked_exactly() -> None:
    tokens = [b"s3cret-token-0123456789"]
    assert bearer_ok({b"authorization": b"Bearer s3cret-token-0123456789"}, tokens)
    assert bearer_ok({b"authorization": b"bearer  s3cret-token-0123456789 "}, tokens)
    for header in (b"", b"Bearer", b"Bearer s3cret", b"Basic s3cret-token-0123456789"):
        assert not bearer_ok({b"authorization": header}, tokens)
    assert not bearer_ok({}, tokens)


@pytest.mark.parametrize(
    ("entry", "kept"),
    [
        ("app.example", "app.example"),
        ("App.Example:8000", "app.example:8000"),
        ("my_box-2", "my_box-2"),
        ("[::1]:9000", "[::1]:9000"),
        ("[2001:DB8::1]", "[2001:db8::1]"),
    ],
)
def test_host_entries_are_kept_as_clients_send_the_header(entry: str, kept: str) -> None:
    assert allowed_host(entry) == kept


@pytest.mark.parametrize(
    "entry",
    [
        "",
        " ",
        "http://app.example",  # a URL, not a Host header
        "app.example/mcp",
        "user@app.example",
        "app.example:",
        "app.example:http",
        "app.example:0",
        "app.example:65536",
        "::1",  # an IPv6 address needs brackets in a Host header
        "[::1",
        "[not-an-address]",
        "app..example",
        "*",
        "bücher.example",
        "app.example:٨٠",  # digits, but not ASCII ones
    ],
)
def test_malformed_host_entries_are_refused(entry: str) -> None:
    with pytest.raises(UsageError, match="--allow-host .*NAME\\[:PORT\\]"):
        allowed_host(entry)


@pytest.mark.parametrize(
    ("entry", "kept"),
    [
        ("https://app.example", "https://app.example"),
        ("https://app.example/", "https://app.example"),  # a copied URL
        ("HTTPS://App.Example:443", "https://app.example"),  # browsers leave the default port out
        ("http://localhost:5173", "http://localhost:5173"),
        ("http://app.example:443", "http://app.example:443"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("vscode-webview://1abc2def", "vscode-webview://1abc2def"),
    ],
)
def test_origin_entries_are_kept_as_browsers_send_the_header(entry: str, kept: str) -> None:
    assert allowed_origin(entry) == kept


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "notanorigin",
        "app.example",
        "app.example:8000",
        "http://",
        "http:///",
        "://app.example",
        "1http://app.example",
        "http://host/path",
        "http://host//",
        "http://host?x=1",
        "http://host#top",
        "http://user:pw@host",
        "http://host:0",
        "http://host:99999",
        "http://host:*",
        "http://::1",
        "http://app example",
        "https://*.example",
    ],
)
def test_malformed_origin_entries_are_refused(entry: str) -> None:
    with pytest.raises(UsageError, match="--allow-origin .*scheme://host\\[:port\\]"):
        allowed_origin(entry)


@pytest.mark.parametrize("entry", ["null", "NULL", " null "])
def test_the_null_origin_is_refused_with_the_reason(entry: str) -> None:
    with pytest.raises(UsageError, match="sandboxed frame"):
        allowed_origin(entry)


def test_the_allowlist_of_a_bind() -> None:
    import socket

    loopback = ("127.0.0.1", "localhost", "[::1]")
    origins = ("http://127.0.0.1", "http://localhost", "http://[::1]")
    assert allowlist("127.0.0.1").hosts == loopback and allowlist("127.0.0.1").origins == origins
    assert allowlist("::1").hosts == loopback
    assert allowlist("192.0.2.10").hosts == (*loopback, "192.0.2.10")  # the bound address
    assert allowlist("fe80::1").hosts == (*loopback, "[fe80::1]")
    assert allowlist("0.0.0.0").hosts == (*loopback, socket.gethostname())
    added = allowlist("127.0.0.1", ["App.Example", "localhost"], ["https://app.example/"])
    assert added.hosts == (*loopback, "app.example") and added.origins == (*origins, "https://app.example")
    with pytest.raises(UsageError, match="--allow-origin null"):
        allowlist("127.0.0.1", allow_origins=["null"])


HEADER_CASES = [
    {"host": "127.0.0.1:8000"},
    {"host": "localhost"},
    {"host": "[::1]:9"},
    {"host": "app.example:8000"},
    {"host": "app.example"},
    {"host": "box.lan:9999"},
    {"host": "box.lan:9998"},
    {"host": "box.lan"},
    {"host": "evil.example:8000"},
    {"host": "localhost.evil.example:8000"},
    {"host": "127.0.0.1.evil.example"},
    {"host": "LOCALHOST:8000"},
    {},
    {"host": ""},
    {"host": "localhost:8000", "origin": "http://localhost:8000"},
    {"host": "localhost:8000", "origin": "http://127.0.0.1"},
    {"host": "localhost:8000", "origin": "https://localhost:8000"},
    {"host": "localhost:8000", "origin": "https://app.example"},
    {"host": "localhost:8000", "origin": "https://app.example:8443"},
    {"host": "localhost:8000", "origin": "http://app.example"},
    {"host": "localhost:8000", "origin": "http://evil.example"},
    {"host": "localhost:8000", "origin": "http://localhost.evil.example"},
    {"host": "localhost:8000", "origin": "null"},
    {"host": "localhost:8000", "origin": ""},
    {"host": "evil.example", "origin": "http://evil.example"},
]


@pytest.mark.parametrize("headers", HEADER_CASES)
def test_a2a_serve_refuses_exactly_what_mcp_serve_refuses(headers: dict[str, str]) -> None:
    """``a2a serve`` checks ``serving.Allowlist.refusal``; ``mcp serve`` hands the same allowlist to the
    MCP SDK's transport check. Both answer every request the same way."""
    from mcp.server.transport_security import TransportSecurityMiddleware
    from starlette.requests import Request

    from portagent.mcp.http import transport_security

    hosts, origins = ["App.Example", "box.lan:9999"], ["HTTPS://App.Example:443/"]
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    sdk = TransportSecurityMiddleware(transport_security("127.0.0.1", hosts, origins))
    answer = asyncio.run(sdk.validate_request(Request({"type": "http", "headers": raw})))
    expected = None if answer is None else (answer.status_code, answer.body)
    assert allowlist("127.0.0.1", hosts, origins).refusal(dict(raw)) == expected
