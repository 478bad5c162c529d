"""Claude Agent SDK message stream → portagent model calls, handoff threads and the run's result.

What the CLI sends (claude-agent-sdk 0.2.189, Claude Code 2.1.332, verified against the emulator):

- **One ``AssistantMessage`` per content block**, all blocks of one API response sharing
  ``message_id`` (SDK_NOTES §8.6). Their ``usage`` is the ``message_start`` usage: input and cache
  counts are right, ``output_tokens`` is the placeholder the API sends at the start of a stream.
- With ``include_partial_messages`` the main thread's raw stream events arrive as ``StreamEvent``s:
  ``message_start`` → content blocks → ``message_delta`` (final usage, ``stop_reason``) →
  ``message_stop``. So a main-thread model call is recorded at ``message_stop`` with exact usage.
- Subagents (Agent tool) get **no** stream events: their blocks come as ``AssistantMessage``s whose
  ``parent_tool_use_id`` is the Agent call's id (text blocks only with ``forward_subagent_text``).
  A subagent call is recorded once its blocks are complete (a ``tool_use`` block, or the next
  non-system message). Its usage is the ``message_start`` one (placeholder ``output_tokens``), except
  for the subagent's last response, whose exact usage the Agent tool's result carries
  (``PostToolUse``). ``details.usage_source`` says which (``stream`` / ``agent_result`` /
  ``message_start``); the run's ``provider_details`` keep the CLI's own totals and the output tokens
  no model call carries (``unattributed_output_tokens``).
- Usage is converted to OTel semantics: Anthropic's ``input_tokens`` excludes the cache buckets, so
  ``input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
- ``model: "<synthetic>"`` messages are the CLI's own error texts ("API Error: 400 …"), not model calls.

Ordering: the CLI asks ``can_use_tool`` (and runs ``PreToolUse``) while the response that holds the
``tool_use`` is still streaming. The adapter waits for :meth:`ClaudeTrace.wait_recorded` of the
``tool_use`` id before asking the gateway, so ``model.call`` always precedes its ``tool.call`` events
and two runs of one script give the same trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
    UserMessage,
)

from portagent.adapters._shared import elapsed_ms
from portagent.adapters.base import REGISTRY
from portagent.adapters.port import RunSession
from portagent.wire.finish import vendor_finish

SYNTHETIC_MODEL = "<synthetic>"
_API_ERROR = re.compile(r"API Error: (\d{3})\b")
"""How the CLI's synthetic error text gives the HTTP status of a failed model request."""

WAIT_S = 10.0
"""How long a hook waits for the model call that asked for its tool before going on anyway."""


@dataclass
class _Call:
    """One API response being assembled."""

    agent: str
    message_id: str
    model: str
    usage: dict[str, Any]
    thread: str | None
    source: str
    """``stream`` (exact usage) or ``message_start`` (placeholder output tokens)."""
    started: float
    stop_reason: str | None = None
    tool_use_ids: list[str] = field(default_factory=list)
    has_tool_use: bool = False


def otel_usage(usage: dict[str, Any]) -> dict[str, int]:
    """Anthropic usage → portagent token fields (input includes cache reads and writes)."""

    def num(key: str) -> int:
        value = usage.get(key)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    cache_read, cache_write = num("cache_read_input_tokens"), num("cache_creation_input_tokens")
    details = usage.get("output_tokens_details") or {}
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else 0
    return {
        "input_tokens": num("input_tokens") + cache_read + cache_write,
        "output_tokens": num("output_tokens"),
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": int(thinking) if isinstance(thinking, int) else 0,
    }


class ClaudeTrace:
    """Consumes the SDK's messages in order and reports model calls to the session."""

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.root = session.bundle.root
        self.threads: dict[str, str] = {}
        """Agent-tool ``tool_use`` id → the subagent running in that thread."""
        self.results: list[ResultMessage] = []
        self.init: dict[str, Any] = {}
        self.retries: list[dict[str, Any]] = []
        self.recorded_usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
        self._stream: _Call | None = None
        self._pending: _Call | None = None
        self._done: set[str] = set()
        self._events: dict[str, asyncio.Event] = {}
        self._final_usage: dict[str, dict[str, Any]] = {}
        self._request_at = self.session.clock.monotonic()

    # --- waiting (used by hooks) -----------------------------------------------------------------

    def _event(self, tool_use_id: str) -> asyncio.Event:
        return self._events.setdefault(tool_use_id, asyncio.Event())

    async def wait_recorded(self, tool_use_id: str | None) -> None:
        """Return once the model call holding this ``tool_use`` is recorded (or after ``WAIT_S``)."""
        if not tool_use_id:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WAIT_S):
                await self._event(tool_use_id).wait()

    def release_all(self) -> None:
        """Wake every waiting hook (the run is ending)."""
        for event in self._events.values():
            event.set()

    # --- messages --------------------------------------------------------------------------------

    def on_message(self, message: Any) -> None:
        """Feed one SDK message. May raise ``BudgetStop`` (``max_turns`` / ``max_cost_usd``)."""
        # A pending subagent response is complete once anything but its own blocks or a system
        # notice (task progress) arrives.
        if (
            self._pending is not None
            and not isinstance(message, SystemMessage)
            and not (isinstance(message, AssistantMessage) and message.message_id == self._pending.message_id)
        ):
            self._flush_pending()
        if isinstance(message, StreamEvent):
            if message.parent_tool_use_id is None:
                self._on_stream(message.event)
        elif isinstance(message, AssistantMessage):
            self._on_assistant(message)
        elif isinstance(message, UserMessage):
            if message.parent_tool_use_id is None:
                self._request_at = self.session.clock.monotonic()
        elif isinstance(message, ResultMessage):
            self.results.append(message)
            self._request_at = self.session.clock.monotonic()
        elif isinstance(message, SystemMessage):
            self._on_system(message)

    def finish(self) -> None:
        """End of stream: record what is still open."""
        try:
            self._flush_pending()
        finally:
            self.release_all()

    def _on_stream(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            msg = event.get("message") or {}
            self.session.before_model_call(self.root)
            self._stream = _Call(
                self.root,
                str(msg.get("id") or ""),
                str(msg.get("model") or ""),
                dict(msg.get("usage") or {}),
                None,
                "stream",
                self._request_at,
            )
        elif kind == "message_delta" and self._stream is not None:
            self._stream.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            self._stream.stop_reason = (event.get("delta") or {}).get("stop_reason")
        elif kind == "message_stop" and self._stream is not None:
            call, self._stream = self._stream, None
            self._record(call)

    def _on_assistant(self, message: AssistantMessage) -> None:
        if message.model == SYNTHETIC_MODEL:
            if message.parent_tool_use_id:
                self._subagent_failed(message)
            return
        if not message.message_id:
            return
        mid = message.message_id
        tool_ids = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
        if mid in self._done:
            for tid in tool_ids:
                self._event(tid).set()
            return
        if self._stream is not None and self._stream.message_id == mid:
            self._stream.tool_use_ids.extend(tool_ids)
            return
        # A subagent's response (or a main-thread one without stream events): assembled from blocks.
        call = self._pending
        if call is None:
            thread = message.parent_tool_use_id
            agent = self.threads.get(thread, self.root) if thread else self.root
            self.session.before_model_call(agent)
            call = self._pending = _Call(
                agent,
                mid,
                message.model,
                dict(message.usage or {}),
                thread,
                "message_start",
                self._request_at,
            )
        call.tool_use_ids.extend(tool_ids)
        if tool_ids:  # tool_use blocks close a response: record it now so its tools can be decided
            call.has_tool_use = True
            self._flush_pending()

    def _subagent_failed(self, message: AssistantMessage) -> None:
        """A subagent's model request failed: the CLI writes its error text in the subagent's thread and
        hands it to the coordinator as the Agent tool's result, so the run goes on (and may complete). The
        failure is recorded as the ``error`` event a failed model request of any other adapter leaves —
        ``http_<status>`` when the text gives one — under the subagent's name; no model call is."""
        text = " ".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
        thread = message.parent_tool_use_id
        agent = self.threads.get(thread, self.root) if thread else self.root
        status = _API_ERROR.search(text)
        code = int(status.group(1)) if status else None
        self.session.record_error(
            f"http_{code}" if code else "provider_error",
            f"the subagent {agent}'s model request failed; Claude Code gave the coordinator its error "
            f"as the {agent} result: {text or message.error or 'no message'}",
            retryable=REGISTRY[self.session.provider].retryable(code) if code else False,
            agent=agent,
            details={"parent_tool_use_id": thread, "cli_error": message.error},
        )

    def thread_done(self, tool_use_id: str | None, usage: Any) -> None:
        """The Agent tool finished (``PostToolUse``): its result carries the subagent's *last* response
        usage, exact — used for the response still pending in that thread."""
        if tool_use_id and isinstance(usage, dict):
            self._final_usage[tool_use_id] = usage

    def _flush_pending(self) -> None:
        call, self._pending = self._pending, None
        if call is not None:
            call.stop_reason = call.stop_reason or ("tool_use" if call.has_tool_use else "end_turn")
            final = (
                self._final_usage.pop(call.thread, None) if call.thread and not call.has_tool_use else None
            )
            if final is not None:
                call.usage, call.source = dict(final), "agent_result"
            self._record(call)

    def _record(self, call: _Call) -> None:
        self._done.add(call.message_id)
        try:
            usage = otel_usage(call.usage)
            self.recorded_usage["input_tokens"] += usage["input_tokens"]
            self.recorded_usage["output_tokens"] += usage["output_tokens"]
            # Measured on the run's clock, from the request going out (the CLI's previous answer) to the
            # streamed response's end; only main-thread responses are streamed, so only they have one.
            latency = elapsed_ms(self.session.clock, call.started) if call.source == "stream" else None
            details: dict[str, Any] = {
                "message_id": call.message_id,
                "stop_reason": call.stop_reason,
                "usage_source": call.source,
            }
            if call.thread:
                details["parent_tool_use_id"] = call.thread
            model = (
                call.model
                if call.model and call.model != SYNTHETIC_MODEL
                else self.session.model_for(call.agent)
            )
            self.session.record_model_call(
                agent=call.agent,
                model=model,
                latency_ms=latency,
                finish_reason=_finish(call.stop_reason),
                response_id=call.message_id,
                details=details,
                **usage,
            )
        finally:
            for tid in call.tool_use_ids:
                self._event(tid).set()

    def _on_system(self, message: SystemMessage) -> None:
        data = message.data or {}
        if message.subtype == "init":
            self.init = data
            self._request_at = self.session.clock.monotonic()  # the CLI is up: the first request goes out now
        elif message.subtype == "api_retry":
            # The CLI retries 429/5xx itself (up to 10 times); make each retry visible in the trace.
            info = {
                k: data.get(k) for k in ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")
            }
            self.retries.append(info)
            status = info["error_status"]
            cause = f"HTTP {status} {info['error']}" if status else f"a connection error ({info['error']})"
            self.session.record_error(
                "api_retry",
                f"Claude Code retries the model call after {cause} "
                f"(attempt {info['attempt']} of {info['max_retries']})",
                retryable=True,
                details=info,
            )
        elif message.subtype == "task_started":
            tool_use_id, agent = data.get("tool_use_id"), data.get("subagent_type")
            if isinstance(tool_use_id, str) and agent in self.session.bundle.agents:
                self.threads.setdefault(tool_use_id, agent)

    # --- the run's result ------------------------------------------------------------------------

    def cli_usage(self) -> dict[str, Any]:
        """The CLI's own per-model totals (``modelUsage`` of the last result), for ``provider_details``."""
        last = self.results[-1] if self.results else None
        return dict(last.model_usage or {}) if last is not None else {}

    def unattributed_output_tokens(self) -> int:
        """Output tokens the CLI counted that no recorded model call carries (subagent placeholders)."""
        total = sum(int(u.get("outputTokens") or 0) for u in self.cli_usage().values() if isinstance(u, dict))
        return max(0, total - self.recorded_usage["output_tokens"])


def _finish(stop_reason: str | None) -> str | None:
    """A response's ``stop_reason`` in the trace's words: ``wire.finish``'s Anthropic table, the one the
    anthropic adapter and the trace importer read (``pause_turn`` and values newer than it: ``other``). Not
    ``reply_finish``'s rule on the reply's calls: Claude Code, not portagent, runs them, and a streamed
    response is recorded at ``message_stop``, before the ``AssistantMessage``s holding its ``tool_use``
    blocks may have arrived (``_on_assistant``), so whether it holds calls is not known yet. No stop reason
    (none sent) is none."""
    return vendor_finish("anthropic", stop_reason) if stop_reason else None
