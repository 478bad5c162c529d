"""The scripted "model": picks the conversation and turn for a request and plans the answer.

- Conversation: the ``x-portagent-conversation`` header names one; otherwise the first conversation
  (file order) whose ``match`` holds for the request's first user text / system prompt.
- Cursor: the number of assistant turns already in the request (``RequestView.assistant_turns``).
  With OpenAI ``previous_response_id`` (server-side history) the cursor continues from the response
  it names, which the engine remembers.
- Faults with ``times`` are counted per (provider, conversation, cursor), under a lock, so "429 once,
  then success" works for each provider on one shared server.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping

from portagent.contracts.emulator_script import (
    ContentFault,
    Conversation,
    EmulatorScript,
    HttpFault,
    SlowFirstByteFault,
    StallFault,
    TruncateFault,
    Turn,
    Usage,
)
from portagent.emulator.plan import (
    ErrorKind,
    ErrorReply,
    Plan,
    PlannedCall,
    ResolvedUsage,
    estimate_tokens,
)
from portagent.emulator.resolve import resolve_handoff, resolve_tool_name
from portagent.emulator.templating import TemplateContext, UnresolvedTemplate
from portagent.wire.items import RequestView

CONVERSATION_HEADER = "x-portagent-conversation"

_FILLER = "The quick brown fox jumps over the lazy dog. "


def provider_of(api: str, headers: Mapping[str, str] | None = None) -> str:
    """The portagent provider a wire API belongs to (for per-provider overrides and counters).

    Anthropic Messages is spoken by two providers: Claude Code (``claude``: the CLI always sends ``x-app:
    cli`` and ``User-Agent: claude-cli/…``, SDK_NOTES §4.5) and any other Messages client, such as the
    ``anthropic`` SDK's tool runner (``anthropic``), recognised by a ``User-Agent`` that is not Claude
    Code's. A request that names no client at all is taken as Claude Code's, as before."""
    if api.startswith("openai"):
        return "openai"
    if api.startswith("anthropic"):
        return "anthropic" if _other_messages_client(headers or {}) else "claude"
    return "adk"


def _other_messages_client(headers: Mapping[str, str]) -> bool:
    lowered = {k.lower(): v for k, v in headers.items()}
    agent = lowered.get("user-agent", "")
    return bool(agent) and lowered.get("x-app") != "cli" and not agent.startswith("claude-cli/")


def slug(name: str) -> str:
    # Anthropic validates tool_use ids against ^[a-zA-Z0-9_-]+$, so ids stay in that alphabet.
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


class Engine:
    """Thread-safe: one engine serves all requests of one server."""

    def __init__(self, script: EmulatorScript) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._fault_counts: dict[tuple[str, str, int], int] = {}
        self._responses: dict[str, tuple[str, int]] = {}
        self._served: dict[tuple[str, str, int], int] = {}
        self._regex = {
            c.name: re.compile(c.match.first_user_regex)
            for c in script.conversations
            if c.match and c.match.first_user_regex
        }

    def reset(self) -> None:
        """Forget fault counters and remembered response ids."""
        with self._lock:
            self._fault_counts.clear()
            self._responses.clear()
            self._served.clear()

    # -- selection ---------------------------------------------------------------------------

    def _known(self) -> str:
        keys = []
        for c in self.script.conversations:
            keys.append(f"{c.name} ({c.match.describe()})" if c.match else f"{c.name} (by name only)")
        return "; ".join(keys)

    def select(self, view: RequestView, headers: Mapping[str, str]) -> tuple[Conversation, int] | ErrorReply:
        turns_in_request = view.assistant_turns()
        named = headers.get(CONVERSATION_HEADER)
        if named:
            conv = self.script.conversation(named)
            if conv is None:
                return ErrorReply(
                    "bad_request",
                    f"portagent emulator: no conversation named {named!r} "
                    f"(header {CONVERSATION_HEADER}); known conversations: {self._known()}",
                )
            return conv, turns_in_request
        prev = view.options.get("previous_response_id")
        if isinstance(prev, str) and prev:
            with self._lock:
                found = self._responses.get(prev)
            if found is not None:
                conv = self.script.conversation(found[0])
                if conv is not None:
                    return conv, found[1] + 1 + turns_in_request
        first = view.first_user_text()
        for conv in self.script.conversations:
            m = conv.match
            if m is None:
                continue
            if m.first_user is not None and (first is None or first.strip() != m.first_user.strip()):
                continue
            if m.first_user_regex is not None and (first is None or not self._regex[conv.name].search(first)):
                continue
            if m.system_contains is not None and m.system_contains not in view.system:
                continue
            return conv, turns_in_request
        shown = "(none)" if first is None else repr(first if len(first) <= 200 else first[:200] + "…")
        return ErrorReply(
            "bad_request",
            f"portagent emulator: no conversation matches first user text "
            f"{shown}; known conversations: {self._known()}",
        )

    # -- faults ------------------------------------------------------------------------------

    def _fires(self, key: tuple[str, str, int], times: int | None) -> bool:
        if times is None:
            return True
        with self._lock:
            n = self._fault_counts.get(key, 0)
            if n >= times:
                return False
            self._fault_counts[key] = n + 1
            return True

    # -- planning ----------------------------------------------------------------------------

    def respond(self, view: RequestView, headers: Mapping[str, str]) -> Plan | ErrorReply:
        selected = self.select(view, headers)
        if isinstance(selected, ErrorReply):
            return selected
        conv, cursor = selected
        provider = provider_of(view.api, headers)
        turns = conv.turns_for(provider)
        if cursor >= len(turns):
            return ErrorReply(
                "bad_request",
                f"portagent emulator: script exhausted for conversation "
                f"{conv.name!r}: it has {len(turns)} turn(s) for provider {provider!r} and "
                f"the request already holds {cursor} assistant turn(s)",
                conversation=conv.name,
                cursor=cursor,
            )
        turn = turns[cursor]
        fault = (
            turn.fault
            if turn.fault and self._fires((provider, conv.name, cursor), turn.fault.times)
            else None
        )
        if isinstance(fault, HttpFault):
            kinds: dict[str, ErrorKind] = {
                "http_429": "rate_limit",
                "http_500": "server_error",
                "http_503": "unavailable",
                "overloaded": "overloaded",
            }
            retry = (
                fault.retry_after_s
                if fault.retry_after_s is not None
                else (1.0 if fault.type == "http_429" else None)
            )
            return ErrorReply(
                kinds[fault.type],
                fault.message or "",
                retry,
                conversation=conv.name,
                cursor=cursor,
                fault=fault.type,
            )
        with self._lock:
            occurrence = self._served[(provider, conv.name, cursor)] = (
                self._served.get((provider, conv.name, cursor), 0) + 1
            )
        try:
            plan = self._plan(view, conv, cursor, turn, fault, occurrence)
        except UnresolvedTemplate as e:  # an error the run reports, never the literal {{…}} as an answer
            return ErrorReply(
                "bad_request",
                f"portagent emulator: conversation {conv.name!r}, turn {cursor} ({provider}): {e}",
                conversation=conv.name,
                cursor=cursor,
            )
        if view.api == "openai.responses":
            with self._lock:
                self._responses[f"resp_{plan.ident}"] = (conv.name, cursor)
        return plan

    def _plan(
        self,
        view: RequestView,
        conv: Conversation,
        cursor: int,
        turn: Turn,
        fault: object,
        occurrence: int = 1,
    ) -> Plan:
        ident = f"emu_{slug(conv.name)}_{cursor}"
        ctx = TemplateContext(view, occurrence)
        notes: list[str] = []
        text = ctx.render(turn.text)
        thinking = ctx.render(turn.thinking)
        declared = view.tool_names()
        calls: list[PlannedCall] = []
        if turn.handoff is not None:
            h = resolve_handoff(turn.handoff, view)
            if h.note:
                notes.append(h.note)
            args = ctx.render_arguments(h.arguments)
            calls.append(PlannedCall(0, f"{ident}_0", h.name, args, _dump(args)))
        for i, call in enumerate(turn.tool_calls):
            name, note = resolve_tool_name(call.name, declared)
            if note:
                notes.append(note)
            args = ctx.render_arguments(call.arguments)
            calls.append(PlannedCall(i, f"{ident}_{i}", name, args, _dump(args)))
        content_type = None
        if isinstance(fault, ContentFault):
            if fault.type == "malformed_arguments":
                calls = [
                    PlannedCall(
                        c.index,
                        c.ident,
                        c.name,
                        c.arguments,
                        _cut(c.arguments_json) if fault.arguments_text is None else fault.arguments_text,
                        True,
                    )
                    for c in calls
                ]
            elif fault.type == "unknown_tool":
                if calls:
                    calls[0] = PlannedCall(
                        0, calls[0].ident, fault.name, calls[0].arguments, calls[0].arguments_json
                    )
                else:
                    calls.append(PlannedCall(0, f"{ident}_0", fault.name, {}, "{}"))
            elif fault.type == "huge_text":
                text = _pad(text or "", fault.size_bytes)
            elif fault.type == "wrong_content_type":
                content_type = fault.content_type
        notes.extend(ctx.notes)
        stop = turn.stop_reason or ("tool_use" if calls else "end_turn")
        return Plan(
            conversation=conv.name,
            cursor=cursor,
            ident=ident,
            model=view.model or "emulator",
            text=text,
            thinking=thinking,
            calls=tuple(calls),
            usage=self._usage(turn.usage, view, text, thinking, calls),
            stop_reason=stop,
            latency_ms=turn.latency_ms if turn.latency_ms is not None else self.script.defaults.latency_ms,
            slow_first_byte_ms=fault.delay_ms if isinstance(fault, SlowFirstByteFault) else 0,
            body_fault=fault if isinstance(fault, StallFault | TruncateFault) else None,
            content_type=content_type,
            notes=tuple(notes),
            fault=getattr(fault, "type", None),
        )

    def _usage(
        self,
        usage: Usage | None,
        view: RequestView,
        text: str | None,
        thinking: str | None,
        calls: list[PlannedCall],
    ) -> ResolvedUsage:
        default = self.script.defaults.usage

        def pick(field: str) -> int | None:
            for source in (usage, default):
                if source is not None and field in source.model_fields_set:
                    return getattr(source, field)  # type: ignore[no-any-return]
            return None

        inp = pick("input_tokens")
        if inp is None:
            inp = estimate_tokens(view.system + "".join(i.text for i in view.items))
        out = pick("output_tokens")
        if out is None:
            out = estimate_tokens((text or "") + (thinking or "") + "".join(c.arguments_json for c in calls))
        cache_read = pick("cache_read_tokens") or 0
        cache_write = pick("cache_write_tokens") or 0
        reasoning = pick("reasoning_tokens") or 0
        return ResolvedUsage(
            max(inp, cache_read + cache_write), max(out, reasoning), cache_read, cache_write, reasoning
        )


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(text: str) -> str:
    """Cut JSON in half so it no longer parses (``{}`` becomes ``{``)."""
    cut = text[: max(1, len(text) // 2)]
    try:
        json.loads(cut)
    except ValueError:
        return cut
    return cut + "{"


def _pad(text: str, size: int) -> str:
    if len(text.encode()) >= size:
        return text
    need = size - len(text.encode()) - 1
    filler = (_FILLER * (need // len(_FILLER) + 1))[:need]
    return (text + " " + filler) if text else filler + " "
