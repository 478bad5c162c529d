"""How a reply ended, in the trace's words, from each wire's own value: one table for the adapters (which
decide with it whether a reply's tool calls run) and the trace importer (which reads recorded replies).

One rule on every provider (docs/adapters/writing-an-adapter.md, "Replies the model did not finish"): a
reply's tool calls run only when its vendor says the reply ended normally — Anthropic ``tool_use``, Gemini
``STOP``, Chat Completions ``tool_calls`` / ``stop``, the Responses API ``completed``. In the trace's words,
they run only when its model call says ``tool_calls``. A reply that ended otherwise names them in
``provider_details.calls_not_run`` and ends the turn with the text so far (``ENDED_EARLY``), or — ``error``,
the vendor saying the reply itself is broken (Gemini ``MALFORMED_FUNCTION_CALL``) — fails the run as a
provider error. SDKs differ (google-adk, openai-agents and LangChain run the calls of a reply whatever its
finish reason): adapters decide with ``reply_finish``, never by what their SDK would do.

Nothing here imports a vendor SDK.
"""

from __future__ import annotations

from typing import Literal

ReplyWire = Literal["anthropic", "gemini", "chat"]
"""The wires whose replies say why they ended in a finish reason (the Responses API says it in a status)."""

ENDED_EARLY = frozenset({"length", "content_filter", "other"})
"""Finish reasons that end the turn with the text so far, calls not run: the token limit (the last call's
arguments may be cut mid-JSON), the content filter, and any reason that is not the normal one."""

_FINISH: dict[ReplyWire, dict[str, str]] = {
    "anthropic": {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "tool_calls",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "content_filter",
        # pause_turn (a server tool's long turn, sent back as it is by the tool runner) and newer ones: other
    },
    "gemini": {
        # a function-call turn ends STOP too: the calls decide tool_calls (``reply_finish``)
        "STOP": "stop",
        "MAX_TOKENS": "length",
        "CONTINUATION": "length",  # the per-request token limit, to be continued
        **dict.fromkeys(
            [
                "SAFETY",
                "RECITATION",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "LANGUAGE",
                "IMAGE_SAFETY",
                "IMAGE_PROHIBITED_CONTENT",
                "IMAGE_RECITATION",
            ],
            "content_filter",
        ),
        # Gemini says the reply itself is broken: its calls were malformed, not allowed, too many
        **dict.fromkeys(
            [
                "MALFORMED_FUNCTION_CALL",
                "UNEXPECTED_TOOL_CALL",
                "TOO_MANY_TOOL_CALLS",
                "MISSING_THOUGHT_SIGNATURE",
                "MALFORMED_RESPONSE",
            ],
            "error",
        ),
        # OTHER, FINISH_REASON_UNSPECIFIED, NO_IMAGE, IMAGE_OTHER and values newer than this table: other
    },
    "chat": {
        "stop": "stop",
        "tool_calls": "tool_calls",
        "function_call": "tool_calls",  # the legacy function-calling field
        "length": "length",
        "content_filter": "content_filter",
        # a value the API does not document (DeepSeek's insufficient_system_resource, a gateway's error): other
    },
}
"""Each wire's finish values in the trace's vocabulary (stop / tool_calls / length / content_filter / error /
other); a value not listed is ``other``."""

_CALLS_RUN_ON: dict[ReplyWire, frozenset[str]] = {
    "anthropic": frozenset({"tool_use"}),
    "gemini": frozenset({"STOP"}),
    # servers other than OpenAI's (vLLM, Ollama) end a reply holding calls with stop
    "chat": frozenset({"tool_calls", "function_call", "stop"}),
}
"""The vendor's values of a reply that ended normally with calls: the only ones whose calls run."""


def vendor_finish(wire: ReplyWire, vendor: str) -> str:
    """A vendor's finish value in the trace's vocabulary, as ``_FINISH`` says (``other`` when not listed), with
    no say on the reply's calls: for a trace of calls that portagent does not decide whether to run (Claude
    Code's, ``adapters/claude/trace.py``). Adapters that decide use ``reply_finish``."""
    return _FINISH[wire].get(vendor, "other")


def reply_finish(wire: ReplyWire, vendor: str | None, *, has_calls: bool) -> str:
    """A reply's finish reason in the trace's vocabulary, from its vendor's value; ``tool_calls`` (its calls
    run) only when the vendor says it ended normally with calls (``_CALLS_RUN_ON``). A reply holding calls
    that ended otherwise is ``length`` / ``content_filter`` / ``error`` / ``other``: its calls do not run. A
    reply without a value (a client that kept none) is ``stop`` when it holds no call — nothing to decide —
    and ``other`` when it does: nobody said it ended normally."""
    if vendor is None:
        return "other" if has_calls else "stop"
    if has_calls and vendor in _CALLS_RUN_ON[wire]:
        return "tool_calls"
    finish = vendor_finish(wire, vendor)
    if finish == "tool_calls":  # the vendor's "run the tools" without a call to run
        return "stop"
    if has_calls and finish == "stop":  # ended normally, but not for the calls it holds (end_turn)
        return "other"
    return finish


RESPONSES_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""The Responses API's ``incomplete_details.reason`` of an answer it ended early; another reason is ``other``."""


def responses_finish(status: str | None, reason: str | None, *, has_calls: bool) -> str:
    """A Responses answer's finish reason in the trace's vocabulary, from its ``status`` (and, ``incomplete``,
    its ``incomplete_details.reason``): ``completed`` is the normal end (``tool_calls`` with calls, else
    ``stop``); ``incomplete`` is ``length`` / ``content_filter``, or ``other`` for a reason the API added later
    (the answer so far is kept, its calls not run, as for any reply that did not end normally); ``failed`` is
    ``error``; any other status (none at all) is ``other``."""
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        return RESPONSES_INCOMPLETE.get(str(reason), "other")
    if status == "failed":
        return "error"
    return "other"
