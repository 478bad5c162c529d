"""Anthropic Messages API adapter (anthropic 2.14): the SDK's own tool runner.

Translation only:

- AgentSpec → one ``client.beta.messages.tool_runner(model, system=instructions, tools, messages)`` per
  agent and user message, on an ``AsyncAnthropic`` client built per run (async clients are bound to their
  event loop, SDK_NOTES §8.5), ``thread=False`` so every request carries the whole conversation (the
  same requests as the plain ``messages.create`` loop, readable in cassettes and by the emulator);
- ToolSpec → ``_GatewayTool``, a ``BetaAsyncBuiltinFunctionTool`` declaring the ToolSpec's JSON Schema
  verbatim as ``input_schema``; its ``call`` hands the input to the gateway and nothing else. A rejected
  call is answered as a ``ToolError`` (the runner sends it with ``is_error: true``, as Claude Code does);
- delegation ``agent_as_tool`` → ``_AgentTool`` declaring ``{"input": string}`` like the other providers;
  its call runs the sub-agent's own tool runner and returns its final text. There is no handoff: a tool
  runner's system prompt and tools are fixed for its loop (``capabilities.PROFILES["anthropic"]``);
- ``output_schema`` → ``output_config.format = {type: json_schema, schema}`` (structured outputs); the text
  answer is parsed here and validated by portagent afterwards;
- model calls → read from each message the runner yields (usage, ``stop_reason``, id). A streamed reply is
  read event by event: one that ends without ``message_stop`` (the connection closed mid-reply) fails the
  run as a retryable provider error, never a completed run holding part of the text.

Why the runner and not a hand-written ``messages.create`` loop: everything portagent needs fits the
runner's public surface. The one thing that needed care is the order of work at each step: the runner
runs a reply's tools lazily when it is asked for the next item, then sends the next request at once. So
the loop here asks for the tool results itself (``generate_tool_call_response()``, cached by the runner
and reused for its next request): once they are there, a stop signal raised in a tool (approval deferred,
budget exhausted) ends the run *before* the next request, and ``session.before_model_call`` counts the next
request before it is sent. The runner catches every exception a tool raises (and logs it with a
traceback), so a signal is kept in the session and reaches the tool runner only as a quiet ``ToolError``.

Tools run only for a reply whose ``stop_reason`` is ``tool_use``, the one reason the Messages API documents
as "run the tools" (the runner itself stops on every other one): a ``max_tokens`` reply may end inside a
``tool_use`` block whose input is cut short, a ``refusal``'s calls are not to be run, and ``pause_turn`` is
sent back as it is. Such a reply ends the turn with the text so far (its model call says why), as an answer
cut by its token limit does on every provider.

Pinned SDK behaviour: a tool name the runner does not know (none declared) is answered by the runner
itself ("Error: Tool '…' not found", ``is_error``); the adapter hands the attempt to the gateway too, so
the trace holds it (``tool.call`` and an ``unknown_tool`` result) in the model's order among the reply's
other calls. Its ``UserWarning`` is silenced.
"""

from __future__ import annotations

import json
import warnings
from collections import deque
from contextvars import ContextVar
from functools import cache
from typing import Any

import anthropic
import httpx2
import pydantic
from anthropic.lib.tools import BetaAsyncBuiltinFunctionTool, ToolError

from portagent.adapters._shared import (
    Stopwatch,
    exception_chain,
    http_hooks,
    observation_json,
    reply_finish,
    tls_context,
    with_known_platform,
)
from portagent.adapters.anthropic import rules
from portagent.adapters.base import REGISTRY, AdapterOutcome, package_version
from portagent.adapters.context_manifest import delegation_input
from portagent.adapters.port import RunSession, RunSignal
from portagent.adapters.session_gateway import AGENT_TOOL_SCHEMA
from portagent.contracts.capabilities import PROFILES
from portagent.contracts.errors import ProviderError, UsageError
from portagent.contracts.portability import Verdict
from portagent.contracts.tool import ToolSpec
from portagent.tools.observations import Observation
from portagent.wire.anthropic_response import anthropic_usage

_NOT_FOUND = r"Tool '.*' not found in tool runner"
"""The runner answers an undeclared tool name itself and warns about it; the answer is pinned in the tests,
the warning would only reach a CLI user's terminal."""

RESUMED = frozenset({"pause_turn", "compaction"})
"""Stop reasons on which the runner sends the unfinished turn back as it is (another request, no tool run)."""


class _Calls:
    """One reply's tool calls, in the model's order. The runner runs a reply's ``tool_use`` blocks one at a
    time, in order, and ``call()`` is given only the input: a declared tool takes its vendor id here. A call
    to a tool nobody declared is answered by the runner itself; it is handed to the gateway (traced, counted
    against the budget) at its own place among the others: before the declared call that follows it, or
    in ``finish()`` when it comes last."""

    def __init__(self, session: RunSession, agent: str) -> None:
        self.session = session
        self.agent = agent
        self.runnable: set[str] = set()
        self._pending: deque[Any] = deque()

    def expect(self, message: Any) -> None:
        self._pending = deque(b for b in message.content if b.type == "tool_use")

    @property
    def undeclared(self) -> bool:
        """Whether the reply calls a tool nobody declared (one the runner answers itself, with a warning)."""
        return any(b.name not in self.runnable for b in self._pending)

    async def take(self, name: str) -> str | None:
        """The vendor id of the declared call ``name`` the runner is running now (undeclared ones before it
        are traced first)."""
        await self.finish(upto_declared=True)
        if self._pending and self._pending[0].name == name:
            return str(self._pending.popleft().id)
        return None

    async def finish(self, *, upto_declared: bool = False) -> None:
        """Hand the leading undeclared calls to the gateway (each a ``tool.call`` and its ``unknown_tool``
        result); all that are left unless ``upto_declared``."""
        while self._pending and (not upto_declared or self._pending[0].name not in self.runnable):
            block = self._pending.popleft()
            if block.name not in self.runnable:
                await self.session.gateway(self.agent).prepare(
                    block.name, block.input, vendor_call_id=block.id, via="function"
                )


class _GatewayTool(BetaAsyncBuiltinFunctionTool):
    """A ToolSpec as a runnable tool: declared verbatim, executed only by the gateway."""

    def __init__(self, spec: ToolSpec, agent: str, session: RunSession, ids: _Calls) -> None:
        self.spec = spec
        self.agent = agent
        self.session = session
        self.ids = ids
        self._param = {
            "name": spec.name,
            "description": spec.model_description(),
            "input_schema": spec.input_schema,
        }

    def to_dict(self) -> Any:
        return dict(self._param)  # asked several times per request; built once (a copy: never shared)

    async def call(self, input: object) -> Any:
        try:
            vendor_id = await self.ids.take(self.spec.name)
            obs = await self.session.gateway(self.agent).call(
                self.spec.name, input, vendor_call_id=vendor_id, via="function"
            )
        except RunSignal as sig:  # kept in session.stop; the loop ends the run before the next request
            raise ToolError(f"run stopped: {sig}") from sig
        text = observation_json(obs)
        if not obs.ok:
            raise ToolError(text)
        return text


class _AgentTool(BetaAsyncBuiltinFunctionTool):
    """An agent-as-tool: its call runs the sub-agent's own tool runner; the parent keeps control."""

    def __init__(self, loop: _Loop, parent: str, target: str, description: str, ids: _Calls) -> None:
        self.loop = loop
        self.parent = parent
        self.target = target
        self.description = description
        self.ids = ids

    def to_dict(self) -> Any:
        return {"name": self.target, "description": self.description, "input_schema": AGENT_TOOL_SCHEMA}

    async def call(self, input: object) -> Any:
        session = self.loop.session
        try:
            vendor_id = await self.ids.take(self.target)
            # arguments that do not match AGENT_TOOL_SCHEMA: the gateway's validation_error, traced
            task = await session.gateway(self.parent).delegation_task(
                self.target, input, vendor_call_id=vendor_id
            )
        except RunSignal as sig:  # an undeclared call before this one met a run budget
            raise ToolError(f"run stopped: {sig}") from sig
        if isinstance(task, Observation):
            raise ToolError(observation_json(task))
        session.record_handoff(
            self.parent, self.target, "agent_as_tool", details={"vendor_call_id": vendor_id}
        )
        task = delegation_input(session, self.parent, self.target, task)  # context: handoff (package first)
        try:
            final, _ = await self.loop.run_agent(self.target, [{"role": "user", "content": task}])
        except RunSignal as sig:
            session.signal(sig)
            raise ToolError(f"run stopped: {sig}") from sig
        except Exception as e:  # a provider error in the sub-agent fails the run, as on the other providers
            self.loop.failure = self.loop.failure or e
            raise ToolError(f"sub-agent {self.target} failed: {e}") from e
        return final if isinstance(final, str) else json.dumps(final, ensure_ascii=False, sort_keys=True)


class _Loop:
    """Runs one agent's tool runner to the end of a user turn, reporting every model call."""

    def __init__(self, session: RunSession, client: anthropic.AsyncAnthropic) -> None:
        self.session = session
        self.client = client
        self.failure: Exception | None = None
        """An error raised inside an agent tool's run (the runner would turn it into a tool result)."""

    def tools(self, agent: str, ids: _Calls) -> list[BetaAsyncBuiltinFunctionTool]:
        node = self.session.bundle.agents[agent]
        out: list[BetaAsyncBuiltinFunctionTool] = [
            _GatewayTool(spec, agent, self.session, ids) for spec in node.tools.values()
        ]
        for edge in node.edges:  # handoff edges never reach here: the verdict refuses them first
            target = self.session.bundle.agents[edge.target].spec
            out.append(
                _AgentTool(
                    self, agent, edge.target, edge.description or target.description or edge.target, ids
                )
            )
        return out

    def params(self, agent: str) -> dict[str, Any]:
        spec = self.session.bundle.agents[agent].spec
        extra: dict[str, Any] = {}
        if spec.output_schema is not None:
            extra["output_config"] = {"format": {"type": "json_schema", "schema": spec.output_schema}}
        temperature = rules.agent_temperature(self.session.bundle, agent)
        if temperature is not None:  # the agent's own: a sub-agent never runs at the root's temperature
            extra["extra_body"] = {"temperature": temperature}
        cache = self.session.options.extra.get("anthropic_cache_control")
        if cache:
            extra["cache_control"] = cache
        return extra

    async def run_agent(
        self, agent: str, messages: list[Any], *, keep_history: bool = False
    ) -> tuple[Any, list[Any]]:
        """One user turn of ``agent`` over ``messages``: its final output, and (``keep_history``: when another
        user message follows) the conversation after it."""
        session = self.session
        calls = _Calls(session, agent)
        tools = self.tools(agent, calls)
        calls.runnable = {t.name for t in tools}
        history = list(messages)
        stopwatch = Stopwatch(session.clock)
        max_tokens = rules.agent_max_tokens(session.bundle, agent)
        session.before_model_call(agent)
        stopwatch.start(agent)
        # One runner type per ``stream`` (messages, or message streams read to their final message).
        runner: Any = self.client.beta.messages.tool_runner(
            model=session.model_for(agent),
            max_tokens=max_tokens,
            system=session.bundle.agents[agent].spec.instructions,
            messages=list(messages),
            tools=tools,
            thread=False,
            stream=session.options.streaming,
            # explicit, so the SDK does not refuse a large max_tokens unstreamed (see rules.request_timeout_s)
            timeout=anthropic.Timeout(rules.request_timeout_s(max_tokens), connect=5.0),
            **self.params(agent),
        )
        last: Any = None
        try:
            async for item in runner:
                message = await _whole_message(item) if session.options.streaming else item
                last = message
                self._record(agent, message, stopwatch.stop(agent))
                if keep_history:
                    history.extend(_reply_in_history(message))
                if message.stop_reason in RESUMED:  # the runner sends the turn back; nothing runs
                    session.before_model_call(agent)
                    stopwatch.start(agent)
                if message.stop_reason != "tool_use":
                    continue  # max_tokens, refusal, end_turn…: no tool runs, the runner ends the turn
                calls.expect(message)
                if calls.undeclared:  # the runner warns when it answers an unknown tool itself
                    with warnings.catch_warnings():
                        warnings.filterwarnings("ignore", message=_NOT_FOUND, category=UserWarning)
                        response = await runner.generate_tool_call_response()
                else:  # catch_warnings swaps the process's filters at every step: only when it has a use
                    response = await runner.generate_tool_call_response()
                await calls.finish()  # undeclared calls after the reply's last declared one
                session.check_stopped()  # a tool deferred an approval or exhausted a budget: no next request
                if self.failure is not None:
                    raise self.failure
                if response is not None:
                    if keep_history:
                        history.append(response)
                    session.before_model_call(agent)
                    stopwatch.start(agent)
        finally:
            await runner.close()
        return self._final(agent, last), history

    def _record(self, agent: str, message: Any, latency: float | None) -> None:
        usage = anthropic_usage(usage_wire(message.usage))
        details: dict[str, Any] = {"message_id": message.id, "stop_reason": message.stop_reason}
        calls = [b.name for b in message.content if b.type == "tool_use"]
        # tool_calls only on tool_use; the same words as every provider (wire.finish's table)
        finish = reply_finish("anthropic", message.stop_reason, has_calls=bool(calls))
        if calls and finish != "tool_calls":  # tools run only on tool_use (max_tokens: cut)
            details["calls_not_run"] = calls  # named as on every provider
        self.session.record_model_call(
            agent=agent,
            model=self.session.model_for(agent),
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            cache_read_tokens=usage.cache_read_tokens if usage else 0,
            cache_write_tokens=usage.cache_write_tokens if usage else 0,
            reasoning_tokens=usage.reasoning_tokens if usage else 0,
            latency_ms=latency,
            finish_reason=finish if message.stop_reason else None,
            response_id=message.id,
            details=details,
        )

    def _final(self, agent: str, message: Any) -> Any:
        if message is None:
            return None
        text = "".join(b.text for b in message.content if b.type == "text")
        if self.session.bundle.agents[agent].spec.output_schema is None:
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text  # output_valid: false is decided by the runner, not a crash here


USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens_details",
)
"""What ``wire.anthropic_response.anthropic_usage`` reads of a reply's usage."""


def usage_wire(usage: Any) -> dict[str, Any]:
    """The fields of a reply's usage that ``anthropic_usage`` reads, as the wire carries them (a nested
    object as a dict, nulls left out). Not ``usage.model_dump()``: dumping the whole object (its cache,
    server-tool and per-iteration breakdowns) cost more than the rest of a model call's record."""
    out: dict[str, Any] = {}
    for key in USAGE_KEYS:
        value = getattr(usage, key, None)
        if isinstance(value, pydantic.BaseModel):
            value = value.model_dump(mode="json", exclude_none=True)
        if value is not None:
            out[key] = value
    return out


class _StreamCut(Exception):
    """A streamed reply ended without ``message_stop``: the connection closed mid-reply."""


async def _whole_message(stream: Any) -> Any:
    """A streamed reply read to its end. The SDK's ``get_final_message()`` returns whatever had arrived when
    the body ended, also when it ended before ``message_stop``: the events are read here first, and a reply
    without its terminal event is an error, never a finished answer holding part of the text.

    Each ``tool_use`` block's ``input_json_delta`` text is kept as it arrives: the SDK builds the block's
    ``input`` with jiter's partial mode, which completes cut JSON (``{"query": "refund deadline", "li``
    becomes ``{"query": "refund deadline"}``). A call whose text is not whole JSON is given its text instead,
    as the unstreamed reply carries it, so the gateway refuses it (validation_error) and the trace keeps what
    the model sent, never a guess that would run. Text that even partial mode cannot read (``{'q': 'x'}``,
    a trailing comma, ``null``) makes the SDK raise mid-stream, ending the run: while this reads the stream,
    ``_keep_unparsed_tool_input`` has the SDK keep such text as the block's input instead."""
    ended = False
    sent: dict[int, list[str]] = {}
    _keep_unparsed_tool_input()
    keeping = _KEEP_TOOL_TEXT.set(True)
    try:
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                sent.setdefault(event.index, []).append(event.delta.partial_json)
            ended = ended or event.type == "message_stop"
    finally:
        _KEEP_TOOL_TEXT.reset(keeping)
    if not ended:
        raise _StreamCut(
            "the streamed reply ended before its message_stop event (the connection closed mid-reply)"
        )
    message = await stream.get_final_message()
    for index, pieces in sent.items():
        block = message.content[index] if index < len(message.content) else None
        if block is not None and block.type == "tool_use":
            block.input = _streamed_input("".join(pieces))
    return message


_KEEP_TOOL_TEXT: ContextVar[bool] = ContextVar("portagent_keep_tool_text", default=False)
"""Set while ``_whole_message`` reads a stream: only then does the SDK keep unreadable tool input text."""


@cache
def _keep_unparsed_tool_input() -> None:
    """Have the SDK's beta stream keep a tool call's input text when jiter cannot read it, instead of raising
    ``ValueError("Unable to parse tool parameter JSON from model…")`` out of the stream — which ends the
    turn where every other provider answers the call with the gateway's ``validation_error``. The SDK
    builds a streamed reply in ``_beta_messages.accumulate_event`` (a module global its streams look up
    per event); it is wrapped once, and the wrapper changes nothing unless ``_KEEP_TOOL_TEXT`` is set in
    the reading task, so other code using the SDK in the process is not affected. If a later SDK moves the
    function, nothing is wrapped and such a reply fails the run as before
    (``tests/adapters/test_malformed_arguments.py`` says so)."""
    from anthropic.lib.streaming import _beta_messages

    original = getattr(_beta_messages, "accumulate_event", None)
    if original is None:
        return

    def accumulate_event(
        *, event: Any, current_snapshot: Any, json_bufs: dict[int, bytes], **rest: Any
    ) -> Any:
        try:
            return original(event=event, current_snapshot=current_snapshot, json_bufs=json_bufs, **rest)
        except ValueError:
            delta = getattr(event, "delta", None)
            if not _KEEP_TOOL_TEXT.get() or current_snapshot is None or delta is None:
                raise
            if delta.type != "input_json_delta":
                raise
            text = json_bufs.get(event.index, b"") + delta.partial_json.encode()
            json_bufs[event.index] = text  # the SDK keeps its buffer only when the text parsed
            current_snapshot.content[event.index].input = text.decode("utf-8", "replace")
            return current_snapshot

    _beta_messages.accumulate_event = accumulate_event


def _streamed_input(text: str) -> Any:
    """A tool call's input as its streamed text says: the object when the text is a whole JSON object (none
    at all is ``{}``: the API sends no delta, or an empty one, for a call without arguments), else the text
    itself — cut or broken JSON, or JSON that is not an object (``null``, ``["x"]``), as OpenAI's wire
    carries it. The runner hands it to the tool (the gateway refuses it, tracing what the model sent) and
    sends it back as it is."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def _reply_in_history(message: Any) -> list[dict[str, Any]]:
    """A reply as the conversation carries it to the next user message. The ``tool_use`` blocks of a reply that
    ended otherwise (``max_tokens``, ``refusal``…) were never run: they are left out, since the API refuses a
    ``tool_use`` that no ``tool_result`` follows (a reply left with nothing is left out whole)."""
    whole = message.stop_reason == "tool_use" or message.stop_reason in RESUMED  # results follow / sent back
    content = [_block_param(b) for b in message.content if whole or b.type != "tool_use"]
    return [{"role": "assistant", "content": content}] if content else []


def _block_param(block: Any) -> dict[str, Any]:
    """A reply's content block as a request param (for the next user message of a multi-turn run)."""
    data: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    data.pop("parsed_output", None)
    if data.get("type") == "text":
        return {"type": "text", "text": data.get("text", "")}
    if data.get("type") == "tool_use":
        return {"type": "tool_use", "id": data["id"], "name": data["name"], "input": data.get("input")}
    return data


# --- running ---------------------------------------------------------------------------------------


class AnthropicAdapter:
    name = "anthropic"
    capabilities = PROFILES["anthropic"]

    def sdk_version(self) -> str:
        return package_version("anthropic")

    def cli_version(self) -> str | None:
        return None

    async def run(self, session: RunSession) -> AdapterOutcome:
        # The runner asks the whole verdict first; asking here too keeps the adapter safe when driven directly.
        Verdict("anthropic", tuple(rules.lacks(session.bundle))).raise_if_unrunnable()
        endpoint = session.endpoint
        # The SDK's own retries are kept (max_retries=2 unless ``options.extra["anthropic_max_retries"]``
        # says otherwise): a 429 is retried natively and shows up as an ``error`` event through the hook.
        retries = session.options.extra.get("anthropic_max_retries")
        from portagent.recording.player import transport_kwargs

        http = anthropic.DefaultAsyncHttpxClient(
            event_hooks=http_hooks(session, "the anthropic client may retry"),
            verify=tls_context(),
            **transport_kwargs("httpx2"),  # a replay: the cassette answers in process
        )
        client = anthropic.AsyncAnthropic(
            api_key=endpoint.api_key or REGISTRY["anthropic"].dummy_key,
            # the run journal's proxy when the run keeps one (resume replays it), else the endpoint itself
            # a server root (``Endpoint`` keeps one): the SDK adds /v1/messages itself
            base_url=endpoint.sdk_url,  # its query goes on each request (http_hooks)
            http_client=http,
            max_retries=int(retries) if retries is not None else anthropic.DEFAULT_MAX_RETRIES,
            # anthropic 2.14 makes OTel spans and propagates trace context by default: portagent writes its
            # own trace, and the requests stay the same from run to run (no traceparent header)
            open_telemetry=False,
        )
        loop = _Loop(session, with_known_platform(client))  # no thread hop per run for its platform probe
        root = session.bundle.root
        history: list[Any] = []
        final: Any = None
        try:
            messages = session.request.messages
            for i, text in enumerate(messages):
                final, history = await loop.run_agent(
                    root, [*history, {"role": "user", "content": text}], keep_history=i + 1 < len(messages)
                )
            session.check_stopped()
        except Exception as e:
            _raise_mapped(e, session)
        finally:
            await client.close()
        return AdapterOutcome(
            final_output=final,
            final_agent=root,
            details={"tool_runner": "beta.messages.tool_runner", "streaming": session.options.streaming},
        )


def _raise_mapped(e: Exception, session: RunSession) -> None:
    """The one place SDK and vendor errors become portagent errors."""
    session.reraise_signal(e)
    # the SDK's error, as it wraps what it met: ``raise APIConnectionError(…) from err`` (exception_chain)
    cause = next((c for c in exception_chain(e) if isinstance(c, anthropic.AnthropicError)), None)
    if isinstance(cause, anthropic.APIStatusError):
        raise ProviderError(
            f"Anthropic API error {cause.status_code}: {cause.message}",
            status=cause.status_code,
            body=cause.response.text,
            retryable=REGISTRY["anthropic"].retryable(cause.status_code),
        ) from e
    broken = next((c for c in exception_chain(e) if isinstance(c, _CONNECTION_ERRORS)), None)
    if broken is not None:
        detail = (
            broken.__cause__
            if isinstance(broken, anthropic.APIConnectionError) and broken.__cause__
            else broken
        )
        raise ProviderError(
            f"cannot reach the Anthropic endpoint {session.endpoint.base_url or 'api.anthropic.com'}, or it "
            f"dropped the connection: {detail}",
            retryable=True,
        ) from e
    if isinstance(cause, anthropic.AnthropicError):
        raise UsageError(f"anthropic client configuration error: {cause}") from e
    if isinstance(e, TypeError) and "authentication" in str(e):
        raise UsageError(f"anthropic client configuration error: {e}") from e
    raise e


_CONNECTION_ERRORS = (anthropic.APIConnectionError, httpx2.TransportError, _StreamCut)
"""A connection that failed, timed out or broke mid-reply: the SDK's own error (it wraps what happens while
it sends a request and reads an unstreamed body), httpx2's transport errors (a stream's body read by the
SDK's iterator escapes unwrapped: ``RemoteProtocolError``, ``ReadError``…), a stream without its end."""


ADAPTER = AnthropicAdapter()
