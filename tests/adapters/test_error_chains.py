"""Which error of a chain each adapter's error mapping reads: the vendor error an SDK wrapped with
``raise … from`` (``__cause__``), never what was being handled when another error was raised
(``__context__``). An error raised while handling a dropped connection read as "the endpoint dropped the
connection" (a retryable provider error) on the anthropic, langgraph, adk and openai adapters.

Unit tests on the mapping functions, with the SDKs' own exception classes built as the SDKs raise them: no
run through a real SDK raises a second error while handling a dropped connection on demand (the emulator's
faults drop connections; they cannot make an SDK's own clean-up fail)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from portagent.adapters._shared import exception_chain
from portagent.adapters.port import Endpoint, RunOptions, RunSession
from portagent.contracts.bundle import load_agent
from portagent.contracts.errors import ProviderError
from portagent.contracts.run import RunRequest
from portagent.core.budgets import RunBudget
from portagent.core.clock import FixedClock, IdFactory
from portagent.tracing.recorder import TraceRecorder

AGENT = Path(__file__).resolve().parents[2] / "examples" / "support_desk" / "agent.yaml"


def _session(provider: str) -> RunSession:
    bundle = load_agent(AGENT)
    clock, ids = FixedClock(), IdFactory("chains")
    return RunSession(
        bundle=bundle,
        request=RunRequest(input="hi", provider=provider),
        endpoint=Endpoint(),
        recorder=TraceRecorder(
            run_id="run_chains", provider=provider, agent=bundle.root, clock=clock, ids=ids
        ),
        budget=RunBudget(bundle.spec.budget),
        clock=clock,
        ids=ids,
        run_id="run_chains",
        attempt=1,
        scope="test:chains",
        options=RunOptions(),
    )


def _while_handling(first: BaseException, second: BaseException) -> BaseException:
    """``second`` raised inside the ``except`` block that caught ``first`` (no ``from``): its
    ``__context__`` is ``first``, its ``__cause__`` None."""
    try:
        try:
            raise first
        except BaseException:
            raise second  # noqa: B904  (the point: an implicit context, as a failing clean-up makes)
    except BaseException as e:
        return e


def _wrapped(outer: BaseException, inner: BaseException) -> BaseException:
    """``raise outer from inner``, as the SDKs wrap what they met."""
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except BaseException as e:
        return e


def _mapped(raise_mapped: Any, error: BaseException, provider: str) -> BaseException:
    with pytest.raises(BaseException) as info:
        raise_mapped(error, _session(provider))
    return info.value


def test_the_chain_follows_causes_only() -> None:
    root = ConnectionResetError("peer closed")
    wrapped = _wrapped(RuntimeError("the SDK's error"), root)
    assert exception_chain(wrapped) == [wrapped, root]
    late = _while_handling(root, KeyError("a bug in a clean-up"))
    assert exception_chain(late) == [late]


def test_anthropic_an_error_raised_while_handling_a_dropped_connection_is_that_error() -> None:
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    from portagent.adapters.anthropic.agent import _raise_mapped

    dropped = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")
    late = _while_handling(dropped, KeyError("a bug in a clean-up"))
    assert _mapped(_raise_mapped, late, "anthropic") is late  # was: "dropped the connection", retryable

    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")
    status = anthropic.InternalServerError(
        "overloaded", response=httpx2.Response(500, request=request), body=None
    )
    late = _while_handling(status, ValueError("raised while handling a 500"))
    assert _mapped(_raise_mapped, late, "anthropic") is late  # was: "Anthropic API error 500"

    # what the SDK wraps itself, with ``from``, is still read
    refused = _wrapped(anthropic.APIConnectionError(request=request), httpx2.ConnectError("refused"))
    mapped = _mapped(_raise_mapped, refused, "anthropic")
    assert isinstance(mapped, ProviderError) and mapped.retryable, mapped
    assert "cannot reach the Anthropic endpoint" in str(mapped) and "refused" in str(mapped)
    mapped = _mapped(_raise_mapped, dropped, "anthropic")  # a stream's body read escapes unwrapped
    assert isinstance(mapped, ProviderError) and mapped.retryable


def test_langgraph_an_error_raised_while_handling_a_dropped_connection_is_that_error() -> None:
    pytest.importorskip("langgraph")
    import httpx

    from portagent.adapters.langgraph.agent import _raise_mapped

    dropped = httpx.ReadError("connection reset")
    late = _while_handling(dropped, KeyError("a bug in a clean-up"))
    assert _mapped(_raise_mapped, late, "langgraph") is late  # was: "dropped the connection", retryable

    wrapped = _wrapped(RuntimeError("the integration's error"), dropped)
    mapped = _mapped(_raise_mapped, wrapped, "langgraph")
    assert isinstance(mapped, ProviderError) and mapped.retryable, mapped


def test_adk_an_error_raised_while_handling_a_dropped_connection_is_that_error() -> None:
    pytest.importorskip("google.adk")
    import httpx

    from portagent.adapters.adk.agent import _raise_mapped

    dropped = httpx.ConnectError("refused")
    late = _while_handling(dropped, KeyError("a bug in a clean-up"))
    assert _mapped(_raise_mapped, late, "adk") is late  # was: "cannot reach the Gemini endpoint", retryable

    wrapped = _wrapped(RuntimeError("ADK's error"), dropped)
    mapped = _mapped(_raise_mapped, wrapped, "adk")
    assert isinstance(mapped, ProviderError) and mapped.retryable, mapped


def test_openai_an_error_raised_while_handling_a_dropped_connection_is_that_error() -> None:
    openai = pytest.importorskip("openai")
    httpx2 = pytest.importorskip("httpx2")
    from portagent.adapters.openai.agent import _raise_mapped

    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/responses")
    dropped = openai.APIConnectionError(request=request)
    late = _while_handling(dropped, KeyError("a bug in a clean-up"))
    assert (
        _mapped(_raise_mapped, late, "openai") is late
    )  # was: "cannot reach the OpenAI endpoint", retryable

    status = openai.InternalServerError(
        "overloaded", response=httpx2.Response(500, request=request), body=None
    )
    late = _while_handling(status, ValueError("raised while handling a 500"))
    assert _mapped(_raise_mapped, late, "openai") is late  # was: "OpenAI API error 500"

    # what the SDKs wrap themselves, with ``from``, is still read
    refused = _wrapped(openai.APIConnectionError(request=request), httpx2.ConnectError("refused"))
    mapped = _mapped(_raise_mapped, _wrapped(RuntimeError("the agents SDK's error"), refused), "openai")
    assert isinstance(mapped, ProviderError) and mapped.retryable, mapped
    assert "cannot reach the OpenAI endpoint" in str(mapped)
