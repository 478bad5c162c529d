"""Reading what a langgraph run's chat model answered, whichever vendor's it is.

- ``read_calls``: a reply's tool calls in the model's own order, those LangChain could not read kept as
  invalid tool calls (the gateway answers them), each with an id that is the same on every run;
- ``read_chat_reply`` / ``read_responses_leniently`` (with ``reading_replies``): langchain-openai's readers of
  a Chat Completions and a Responses reply, made to keep a call whose arguments are JSON but not an object
  as an invalid tool call instead of failing the run — shared with the program ``export --to langgraph``
  writes (``migration/exported.py``), so both read a reply alike;
- ``finish_reason`` / ``stream_finished`` / ``prompt_blocked`` / ``refusal_as_text``: why the model stopped,
  from the vendor's own stop value, and whether a streamed answer reached its vendor's terminal event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from portagent.adapters._shared import reply_finish
from portagent.wire.finish import RESPONSES_INCOMPLETE

ORDER_KEY = "portagent_tool_call_ids"
"""``response_metadata`` key under which ``_chat_openai`` keeps a Chat Completions reply's tool call ids in
the model's order (``read_calls`` reads it; the graph's own message does not keep it)."""


NOT_AN_OBJECT = "arguments are not a JSON object"
"""The error of a call whose arguments are JSON but not an object (``null``, ``["x"]``, ``"x"``)."""


def not_an_object(text: Any) -> bool:
    """Whether a call's argument text is JSON — as langchain-openai reads it (``strict=False``) — that is not
    an object. langchain-openai hands such a value to ``AIMessage`` as the call's ``args``, which pydantic
    refuses, failing the run (unreadable text it keeps as an invalid tool call itself)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        return not isinstance(json.loads(text, strict=False), dict)
    except ValueError:
        return False


def with_empty_arguments(response: Any, bad: dict[Any, Any]) -> Any:
    """A Chat Completions reply with the ``bad`` calls' arguments made ``{}``, for langchain-openai to read
    (a copy; the reply itself as it is when there are none)."""
    if not bad:
        return response
    if isinstance(response, dict):
        copied: Any = json.loads(json.dumps(response))
        for choice in copied.get("choices") or []:
            for call in (choice.get("message") or {}).get("tool_calls") or []:
                if call.get("id") in bad:
                    call["function"]["arguments"] = "{}"
        return copied
    copied = response.model_copy(deep=True)
    for choice in copied.choices:
        for call in choice.message.tool_calls or []:
            if call.id in bad:
                call.function.arguments = "{}"
    return copied


def as_invalid_calls(message: Any, bad: dict[Any, tuple[str | None, str]]) -> None:
    """Move the ``bad`` calls (id → name, argument text) of a reply read with ``{}`` for their arguments to
    its invalid tool calls, holding the text the model sent — which the gateway answers with
    ``validation_error`` and the next request sends back — and put that text back in the reply's content
    blocks (the Responses API's ``function_call`` blocks carry it to the next request)."""
    from langchain_core.messages.tool import invalid_tool_call

    message.tool_calls = [c for c in message.tool_calls if c.get("id") not in bad]
    message.invalid_tool_calls = [
        *message.invalid_tool_calls,
        *(
            invalid_tool_call(name=name, args=text, id=i, error=NOT_AN_OBJECT)
            for i, (name, text) in bad.items()
        ),
    ]
    if isinstance(message.content, list):
        for block in message.content:
            if (
                isinstance(block, dict)
                and block.get("type") == "function_call"
                and block.get("call_id") in bad
            ):
                block["arguments"] = bad[block["call_id"]][1]


_OWN_CALL: ContextVar[bool] = ContextVar("portagent_langgraph_model_call", default=False)
"""Set while the adapter's own model call runs (``reading_replies``)."""


@contextmanager
def reading_replies() -> Iterator[None]:
    """Around the adapter's own model call: langchain-openai's Responses reader (wrapped by
    ``read_responses_leniently``) keeps a call whose arguments are not an object as an invalid tool call.
    Other code using langchain-openai in the process is left as it is."""
    token = _OWN_CALL.set(True)
    try:
        yield
    finally:
        _OWN_CALL.reset(token)


@lru_cache(maxsize=1)
def read_responses_leniently() -> None:
    """langchain-openai reads a Responses API reply — unary, and a streamed one's last event — with the
    module function ``_construct_lc_result_from_responses_api``, which fails the run on a call whose
    arguments are JSON but not an object (see ``not_an_object``). Wrapped once: during ``reading_replies``
    such calls are read with ``{}`` and then made invalid tool calls holding their text. A later
    langchain-openai without the function is left alone (``tests/adapters/test_malformed_arguments.py`` then
    fails)."""
    from langchain_openai.chat_models import base

    original = getattr(base, "_construct_lc_result_from_responses_api", None)
    if original is None:
        return

    def construct(response: Any, *args: Any, **kwargs: Any) -> Any:
        output = getattr(response, "output", None) or []
        bad = {
            o.call_id: (o.name, o.arguments)
            for o in output
            if getattr(o, "type", None) == "function_call" and not_an_object(o.arguments)
        }
        if not bad or not _OWN_CALL.get():
            return original(response, *args, **kwargs)
        read = response.model_copy(
            update={
                "output": [
                    o.model_copy(update={"arguments": "{}"}) if getattr(o, "call_id", None) in bad else o
                    for o in output
                ]
            }
        )
        result = original(read, *args, **kwargs)
        as_invalid_calls(result.generations[0].message, bad)
        return result

    base._construct_lc_result_from_responses_api = construct


def read_chat_reply(create: Callable[..., Any], response: Any, *args: Any) -> Any:
    """``create(response, *args)`` — ``ChatOpenAI._create_chat_result``, which builds the ``AIMessage`` of a
    Chat Completions reply — with the calls whose arguments are JSON but not an object (``null``, ``["x"]``,
    ``"x"``) read with ``{}`` and then kept as invalid tool calls holding the model's text. Left to
    langchain-openai, ``null`` became ``{}`` (a valid call, traced as one) and the others failed the run
    (pydantic refuses ``args`` that are not a dict)."""
    raw = response if isinstance(response, dict) else response.model_dump(warnings=False)
    bad = {
        c.get("id"): ((c.get("function") or {}).get("name"), c["function"]["arguments"])
        for choice in raw.get("choices") or []
        for c in (choice.get("message") or {}).get("tool_calls") or []
        if not_an_object((c.get("function") or {}).get("arguments"))
    }
    result = create(with_empty_arguments(response, bad), *args)
    if bad:
        as_invalid_calls(result.generations[0].message, bad)
    return result


TOOL_BLOCKS = {"tool_use": "id", "function_call": "call_id", "tool_call": "id"}
"""Content blocks that are tool calls, and the key of their call id: Anthropic ``tool_use``, the Responses
API's ``function_call``, LangChain's standard ``tool_call``."""


def read_calls(reply: Any, vendor: str, id_stem: str) -> list[Any]:
    """The reply's tool calls in the order the model sent them, each a LangChain ``tool_call`` or, when its
    arguments are not a JSON object, an ``invalid_tool_call`` holding the text the model sent (the gateway
    answers it with validation_error, so the vendor sees its own call answered).

    A streamed reply is read from its chunks: LangChain parses a streamed call's text as *partial* JSON, so
    cut arguments (``{"order_id": "ORD-7", "amount_eur": 3``) would become a call with what was left;
    here they must be whole JSON, as for an answer in one piece.

    Ids: langchain-google-genai invents a random one for each Gemini call (Gemini sends none); that id
    reaches the request body of the next chat model after a handoff (OpenAI's, Anthropic's), which a
    cassette then never matches. A Gemini call, and any call without an id, gets ``<id_stem>_<index>``
    (``id_stem`` is the run's model-call count: the same on record and replay). Gemini's requests carry
    no call id, so nothing the vendor sees changes."""
    from langchain_core.messages.tool import invalid_tool_call, tool_call

    chunks = getattr(reply, "tool_call_chunks", None) or []
    out: list[Any] = []
    if chunks:
        for chunk in chunks:
            text: str = chunk.get("args") or ""
            args: Any = None
            error: str | None = None
            try:
                args = json.loads(text) if text.strip() else {}
            except ValueError as e:
                error = f"arguments are not valid JSON: {e}"
            if error is None and not isinstance(args, dict):
                error = "arguments are not a JSON object"
            name, call_id = chunk.get("name") or "", chunk.get("id")
            out.append(
                tool_call(name=name, args=args, id=call_id)
                if error is None
                else invalid_tool_call(name=name, args=text, id=call_id, error=error)
            )
    else:
        for call in reply.tool_calls or []:
            given = call.get("args")
            if isinstance(given, dict):
                out.append(dict(call))
                continue
            out.append(
                invalid_tool_call(
                    name=call.get("name"),
                    args=given if isinstance(given, str) else json.dumps(given),
                    id=call.get("id"),
                    error="arguments are not a JSON object",
                )
            )
        out += list(getattr(reply, "invalid_tool_calls", None) or [])
        order = _vendor_order(reply)
        out.sort(key=lambda c: order.get(c.get("id"), len(order)))  # stable: unknown ids keep their place
    for i, call in enumerate(out):
        if vendor == "google_genai" or not call.get("id"):
            call["id"] = f"{id_stem}_{i}"
    return out


def _vendor_order(reply: Any) -> dict[Any, int]:
    """Call id → position, from what the reply kept of the vendor's order: its content blocks (Anthropic,
    the Responses API), or ``ORDER_KEY`` (Chat Completions, ``_chat_openai``)."""
    ids: list[Any] = list((reply.response_metadata or {}).get(ORDER_KEY) or [])
    if not ids and isinstance(reply.content, list):
        for block in reply.content:
            key = TOOL_BLOCKS.get(str(block.get("type"))) if isinstance(block, dict) else None
            if key is not None:
                ids.append(block.get(key))
    return {call_id: i for i, call_id in enumerate(ids)}


def without_calls(content: Any) -> Any:
    """A reply's content without its tool-call blocks: the message kept when its calls are not run (an
    answer cut by the token limit), which must not show the vendor calls left unanswered."""
    if not isinstance(content, list):
        return content
    return [b for b in content if not (isinstance(b, dict) and b.get("type") in TOOL_BLOCKS)]


def refusal_as_text(reply: Any) -> Any | None:
    """The content of an OpenAI reply in which the model refused, its refusal as text — what the model said,
    the answer of the turn, as an Anthropic refusal's text is — or None when it did not refuse. OpenAI says a
    refusal in the content, not in a finish reason: a Responses ``refusal`` content block, Chat Completions'
    ``message.refusal`` (``additional_kwargs["refusal"]``; the content is then empty). LangChain hands such a
    reply on as an answer without text, and runs its calls."""
    refusal = (reply.additional_kwargs or {}).get("refusal")
    content = reply.content
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "refusal" for b in content):
        return [
            {"type": "text", "text": str(b.get("refusal") or "")}
            if isinstance(b, dict) and b.get("type") == "refusal"
            else b
            for b in content
        ]
    if not isinstance(refusal, str):  # an empty refusal ("") is one all the same
        return None
    if isinstance(content, list):
        return [*content, {"type": "text", "text": refusal}]
    return (content or "") + refusal


def finish_reason(vendor: str, reply: Any, calls: bool) -> str:
    """Why the model stopped, from what the chat model kept of the vendor's answer (its own stop value in
    ``response_metadata``), in the trace's vocabulary. ``tool_calls`` — the reply's calls run — only when the
    vendor says the reply ended normally with calls (Anthropic ``tool_use``, Gemini ``STOP``, Chat Completions
    ``tool_calls`` / ``stop``, the Responses API ``completed``; ``_shared.reply_finish``): a reply holding calls
    that the token limit cut (``length``), the content filter stopped (``content_filter``), that ended for
    any other reason (``other``, its text the turn's answer) or that Gemini says is broken (``error``, a
    provider error) runs none of them, as on every provider. LangChain runs the calls of any reply."""
    meta = reply.response_metadata or {}
    if vendor == "anthropic":
        raw = meta.get("stop_reason")
        return reply_finish("anthropic", str(raw) if raw else None, has_calls=calls)
    if vendor == "google_genai":
        raw = meta.get("finish_reason")
        raw = getattr(raw, "name", raw)  # a FinishReason, or its name
        if not raw and prompt_blocked(reply) is not None:  # a filtered reply holding nothing
            return "content_filter"
        return reply_finish("gemini", str(raw) if raw else None, has_calls=calls)
    if refusal_as_text(reply) is not None:  # the model refused: the content filter's stop, as Anthropic's
        return "content_filter"
    raw = meta.get("finish_reason")
    if raw:  # Chat Completions
        return reply_finish("chat", str(raw), has_calls=calls)
    status = meta.get("status")
    if status == "incomplete":  # the Responses API ended the answer early
        reason = (meta.get("incomplete_details") or {}).get("reason")
        return RESPONSES_INCOMPLETE.get(str(reason), "other")
    if status is not None and status != "completed":
        return "other"
    return "tool_calls" if calls else "stop"


def prompt_blocked(reply: Any) -> str | None:
    """The block reason of a Gemini answer without a candidate that refused the prompt itself (only
    ``promptFeedback.blockReason``; langchain-google-genai hands it on as an empty message with its
    ``prompt_feedback``), or None. Read as a filtered reply holding nothing (``content_filter``, the turn's
    answer ``""``), as the adk provider and the trace importer read it; an answer that has a finish reason is
    not one (its ``prompt_feedback`` says ``block_reason`` 0 / none)."""
    meta = reply.response_metadata or {}
    if meta.get("finish_reason"):
        return None
    feedback = meta.get("prompt_feedback")
    reason = feedback.get("block_reason") if isinstance(feedback, dict) else None
    if not reason:
        return None
    return str(getattr(reason, "name", reason))


def stream_finished(vendor: str, reply: Any) -> bool:
    """Whether a streamed answer reached its vendor's end: the stop value that only the last events carry
    (Anthropic ``message_delta.stop_reason``, just before ``message_stop``; OpenAI Chat Completions'
    ``finish_reason``, before ``[DONE]``; the Responses API's ``response.completed`` / ``.incomplete`` /
    ``.failed``; Gemini's ``finishReason`` on its last chunk). A body that ends cleanly without it was cut
    short: the vendor clients end such a stream quietly, and LangChain would hand on the text so far as if
    it were the answer."""
    if reply is None:
        return False
    meta = reply.response_metadata or {}
    if vendor == "anthropic":
        return bool(meta.get("stop_reason"))
    if vendor == "google_genai":  # a blocked prompt's one chunk carries no finishReason: it is whole
        return bool(meta.get("finish_reason")) or prompt_blocked(reply) is not None
    return bool(meta.get("finish_reason")) or meta.get("status") not in (None, "queued", "in_progress")
