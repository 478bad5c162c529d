"""One rule for exposing a server (core/serving.py), used by ``mcp serve``, ``a2a serve`` and the replay
guard: what is loopback, which binds need a token, which tokens are too weak, which requests carry one."""

from __future__ import annotations

import pytest

from portagent.a2a.server import check_bind as a2a_check_bind
from portagent.contracts.errors import UsageError
from portagent.core.serving import bearer_ok, is_loopback
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
