"""What every adapter would otherwise write for itself, said once.

The session port (``port.py``) is what an adapter reports *to*; this module holds the small helpers
adapters share on their own side of it. Kept apart from ``port.py`` because they are about the
vendor's wire, not the run: how an observation is encoded for the model, how a reply's finish reason
decides whether its calls run, how a model call's latency is measured, how an HTTP error answer becomes an
``error`` event, and the TLS context of the model client. (The fifth repeat, the prelude that re-raises run signals, is ``RunSession.reraise_signal``:
it reads the session's own ``stop``.) Provider facts — dummy keys, retryable statuses — are data on
the registry (``base.REGISTRY``).

No vendor SDK is imported here: every adapter may use it, whichever SDKs are installed.
"""

from __future__ import annotations

import json
import os
import ssl
import weakref
from collections.abc import Awaitable, Callable, Mapping
from functools import lru_cache
from typing import Any, Protocol

from portagent.adapters.base import REGISTRY
from portagent.adapters.port import RunSession
from portagent.core.clock import Clock
from portagent.tools.observations import Observation, jsonable_or_text
from portagent.wire.finish import ENDED_EARLY as ENDED_EARLY  # the adapters' names for the wire's rule
from portagent.wire.finish import ReplyWire as ReplyWire
from portagent.wire.finish import reply_finish as reply_finish

# --- observations ---------------------------------------------------------------------------------


def observation_json(obs: Observation) -> str:
    """The observation as the JSON text the model sees. Every adapter sends these exact bytes (sorted
    keys, non-ASCII kept): recorded request bodies and Claude's permission answers are compared
    byte for byte on replay. Handler outputs are already plain JSON (the gateway's one encoder,
    ``observations.to_jsonable``); anything else that reaches here goes through the same encoder. A
    handler's successful output was serialised once already, when the gateway sized it: that text is sent
    (``Observation.model_text``, the same bytes)."""
    if obs.model_text is not None:
        return obs.model_text
    return json.dumps(obs.to_model(), ensure_ascii=False, sort_keys=True, default=jsonable_or_text)


def observation_object(obs: Observation) -> dict[str, Any]:
    """The observation as a JSON object (Gemini's function response takes an object, not text): the
    same value, in the same key order, as :func:`observation_json`."""
    value: dict[str, Any] = json.loads(observation_json(obs))
    return value


# --- how a reply ended ------------------------------------------------------------------------------
# The rule and its tables live with the wire (``wire/finish.py``), where the trace importer reads recorded
# replies with them too: adapters decide with ``reply_finish`` whether a reply's calls run.

# --- model-call latency -----------------------------------------------------------------------------


def exception_chain(e: BaseException) -> list[BaseException]:
    """``e`` and what it was raised from (``__cause__``), outermost first: where an adapter looks for the
    vendor error an SDK wrapped (a dropped connection, a response that did not parse). The SDKs wrap with an
    explicit ``raise … from`` (anthropic's and openai's clients ``raise APIConnectionError(…) from err``,
    langchain-google-genai ``raise ChatGoogleGenerativeAIError(…) from e``). The implicit ``__context__`` —
    what was being handled when ``e`` was raised — is not followed: an error raised while handling a
    dropped connection (a bug in a ``finally``, a close that failed) is that error, not the connection's,
    and must not read as "the endpoint dropped the connection, retry"."""
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in out:
        out.append(cur)
        cur = cur.__cause__
    return out


def elapsed_ms(clock: Clock, started: float) -> float:
    """Milliseconds since ``started`` (a ``clock.monotonic()`` reading), to the microsecond."""
    return round((clock.monotonic() - started) * 1000, 3)


class Stopwatch:
    """Model-call latency per key (the agent making the call), measured on the run's injected clock
    like every other duration in the trace — never on wall time behind the clock's back. Replays use
    a fixed clock, and take model latencies from the recording anyway."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._started: dict[str, float] = {}

    def start(self, key: str) -> None:
        self._started[key] = self._clock.monotonic()

    def stop(self, key: str) -> float | None:
        """Milliseconds since ``start(key)``; None when it was never started."""
        started = self._started.pop(key, None)
        return elapsed_ms(self._clock, started) if started is not None else None


# --- the model client's HTTP ------------------------------------------------------------------------


class _Url(Protocol):
    @property
    def path(self) -> str: ...


class _Request(Protocol):
    @property
    def url(self) -> _Url: ...


class HttpResponse(Protocol):
    """What the hook reads of a response: ``httpx.Response`` (google-genai) and ``httpx2.Response``
    (the openai client's fork of httpx) both fit."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def request(self) -> _Request: ...


ResponseHook = Callable[[HttpResponse], Awaitable[None]]


def http_error_hook(session: RunSession, retry_note: str) -> ResponseHook:
    """An httpx response hook for the model client: an HTTP error answer becomes an ``error`` event
    (``http_<status>``, ``retryable`` from the provider's facts), so a retry the vendor client makes by
    itself is visible in the trace, not only in the server's log. ``retry_note`` says who retries.

    The hook keeps the session by a weak reference: the SDK clients are reference cycles of their own
    (freed only by the garbage collector), and a strong reference from the client would keep the whole
    finished run (session, gateways, events) waiting for that collection too."""
    info = REGISTRY[session.provider]
    run = weakref.ref(session)

    async def hook(response: HttpResponse) -> None:
        status = response.status_code
        session = run()
        if status >= 400 and session is not None:
            retry_after = response.headers.get("retry-after")
            session.record_error(
                f"http_{status}",
                f"HTTP {status} from {response.request.url.path}"
                + (f" (retry-after {retry_after} s)" if retry_after else "")
                + f"; {retry_note}",
                retryable=info.retryable(status),
                agent=session.current_agent,
            )

    return hook


def http_hooks(session: RunSession, retry_note: str) -> dict[str, list[Any]]:
    """The model client's httpx event hooks: ``http_error_hook``, and — when the run passes its requests
    through a gate of its own (``session.request_gate``: a recording under ``--live`` limits; a run with a
    journal is held by the journal's proxy instead) — each request held until the provider's rate allows
    it, each 429/503/529 pausing the provider, each whole answer's tokens owed to its token rate (a
    streamed answer is not read here: its tokens reach the scheduler with the run's model calls)."""
    hooks: dict[str, list[Any]] = {"response": [http_error_hook(session, retry_note)], "request": []}
    query = session.endpoint.sdk_query
    if query:  # the base URL's query, on every request (``Endpoint.sdk_url`` left it out of the SDK's URL)

        async def with_query(request: Any) -> None:
            request.url = request.url.copy_merge_params(query)

        hooks["request"].append(with_query)
    gate = session.request_gate
    if gate is None:
        return hooks

    async def before(request: Any) -> None:
        import asyncio

        await asyncio.to_thread(gate.before_forward, b"")  # blocks on the gate's own loop, not this one

    async def after(response: Any) -> None:
        gate.on_response(response.status_code, dict(response.headers))
        if "text/event-stream" not in response.headers.get("content-type", ""):
            await response.aread()  # kept by the response: the SDK reads the same bytes
            gate.on_complete(response.status_code, response.content)

    hooks["request"].append(before)
    hooks["response"].append(after)
    return hooks


@lru_cache(maxsize=4)
def _tls(cafile: str, capath: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile, capath=capath)


def tls_context() -> ssl.SSLContext:
    """One TLS context per CA setting for the whole process, for every adapter's model client. The
    clients are built per run (async clients are bound to their loop), and loading the CA bundle costs
    ~15-35 ms each time, the largest part of a short run. CA sources as google-genai's (and, but for
    ``SSL_CERT_DIR`` adding to certifi rather than replacing it, httpx's): ``SSL_CERT_FILE`` else
    certifi's bundle, plus ``SSL_CERT_DIR``."""
    import certifi  # httpx's dependency: installed with every SDK that has a model client

    return _tls(os.environ.get("SSL_CERT_FILE", certifi.where()), os.environ.get("SSL_CERT_DIR"))


@lru_cache(maxsize=4)
def _platform(package: str) -> Any:
    """The SDK's own answer for its ``X-Stainless-OS`` header (``<package>._base_client.get_platform``),
    worked out once per process; None when the SDK has no such function."""
    import importlib

    try:
        return importlib.import_module(f"{package}._base_client").get_platform()
    except (ImportError, AttributeError):  # pragma: no cover - an SDK that no longer has it
        return None


def with_known_platform(client: Any) -> Any:
    """``client`` (an ``openai`` or ``anthropic`` async client) with its platform already known.

    Both SDKs find the platform for their ``X-Stainless-*`` headers lazily: the first request of each
    client runs ``get_platform()`` on a worker thread (``asyncify``: it may read ``/etc/os-release``).
    Clients are built per run (bound to the run's loop), so every run started the loop's default thread
    pool, hopped to it and joined it when the loop closed: ~1.5 ms of a 50 ms replayed run, for an answer
    that is the process's own. It is worked out once here, with the SDK's own function, and given to the
    client as the SDK would have stored it (``_platform``; left alone if a release renames it)."""
    if getattr(client, "_platform", False) is None:
        platform = _platform(type(client).__module__.split(".")[0])
        if platform is not None:
            client._platform = platform
    return client
