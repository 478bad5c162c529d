"""Answers the API ended early — cut by the token limit or stopped by the content filter — on the
openai provider: passed on as the answers they are (openai-agents would raise on an ``incomplete``
Responses answer), traced with their finish reason, their function calls taken out before openai-agents
sees them (none runs: the last one's arguments may be cut mid-JSON), as on every provider
(docs/adapters/writing-an-adapter.md, "Replies the model did not finish").

A refusal is one of them: OpenAI says it in the reply's content (a Responses ``refusal`` content part, Chat
Completions' ``message.refusal``, which openai-agents turns into the same part), not in its finish reason.
openai-agents raises ``ModelRefusalError`` on such a reply (it failed the run, and an agent run as a tool
failed its parent's) and runs its calls if it holds any. Here it is the content filter's stop, as an
Anthropic ``stop_reason: refusal``: traced ``content_filter``, its calls not run, the refusal text passed
on as the reply's text — the answer of the turn, as an Anthropic refusal's text is. A refusal is the part's
presence, whatever it says: an empty one (``"refusal": ""``, which openai-agents' Chat Completions converter
drops) is a refusal too, and ends the turn with ``""``."""

from __future__ import annotations

import itertools
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import openai
from agents import (
    ItemHelpers,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
)
from openai.types.responses import ResponseCompletedEvent, ResponseOutputText

from portagent.adapters._shared import reply_finish
from portagent.wire.finish import responses_finish


def chat_ended_early(reason: str | None) -> str | None:
    """The finish reason of a completion that did not end normally — ``length``, ``content_filter``, or
    ``other`` for a value the API does not document (DeepSeek's ``insufficient_system_resource``, a gateway's
    ``error``) — else None: ``stop`` and ``tool_calls`` end a reply normally, calls and all
    (``_shared.reply_finish``), and a completion whose reason was not read is left to the SDK."""
    if reason is None:
        return None
    finish = reply_finish("chat", reason, has_calls=True)
    return None if finish == "tool_calls" else finish


class CutAnswers:
    """Answers cut by the token limit: Responses the API ended early because they reached
    ``max_output_tokens``, completions whose ``finish_reason`` is ``length``. An answer the content filter
    ended (``content_filter``) is treated alike, traced ``finish_reason: content_filter``, and so is a
    completion whose finish reason is neither ``stop`` nor ``tool_calls``, or a Responses answer incomplete
    for another reason (``other``: openai-agents runs the calls of any completion and fails an incomplete
    answer).

    openai-agents treats such a response as a failure; the Messages API, Gemini and Chat Completions return
    the text so far with a ``length`` reason, and so does portagent on every provider: the response goes
    on marked completed, its id remembered so the model call is traced with ``finish_reason: length``.
    Its function calls are not run (``without_calls``): the last one's arguments may be cut mid-JSON, as on
    the anthropic and langgraph providers."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        """Responses kept although incomplete: their finish reason (``length``, ``content_filter``) by id."""
        self.chat: dict[str | None, str] = {}
        """Chat Completions: the vendor's finish reason of each completion, by the key ``ChatModel`` gives
        its ``ModelResponse`` (``request_id``, ``chat_key``; the SDK's ``ModelResponse`` keeps no reason)."""
        self._calls = itertools.count(1)
        self.not_run: dict[tuple[str | None, str | None], list[str]] = {}
        """The names of the calls taken out of a cut answer, by (response id, request id) as the SDK's
        ``ModelResponse`` carries them, until its model call is traced."""
        self.bare: set[tuple[str | None, str | None]] = set()
        """Cut or refused answers that say nothing (their last message holds no text once their calls were
        taken out, or there is none: a refusal ``""``, a cut before any text), by the same key, until
        ``ended_bare`` ends one. An agent with an output schema would find no final output in them and ask
        its model again."""
        self.refused: set[tuple[str | None, str | None]] = set()
        """Answers in which the model refused (``refusal_as_text``), by the same key, until their model call
        is traced: ``content_filter``."""
        self.bare_structured: dict[str, tuple[str | None, str | None]] = {}
        """Such an answer (``bare``) of an agent with an output schema, by agent, until its next model call: an agent
        run as a tool has no ``ended_bare`` (``Agent.as_tool`` takes no error handlers), and the SDK asks
        its model again — the adapter's ``on_llm_start`` hook ends that run instead (``EndedBare``)."""

    def keep(self, response: Any) -> bool:
        """Pass an incomplete Responses answer on as completed (the text so far is the answer, as on every
        other provider): cut by the token limit (``length``), stopped by the content filter
        (``content_filter``), or for a reason the API added later (``other``, as any reply that did not end
        normally; it failed the run)."""
        if getattr(response, "status", None) != "incomplete":
            return False
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
        self.ids[response.id] = responses_finish("incomplete", reason, has_calls=False)
        response.status = "completed"
        return True

    def wrap(self, client: openai.AsyncOpenAI) -> None:
        """The non-streaming path: the SDK checks the status right after ``responses.create``."""
        create = client.responses.create

        async def create_keeping_cut_answers(*args: Any, **kwargs: Any) -> Any:
            response = await create(*args, **kwargs)
            if not kwargs.get("stream"):
                self.keep(response)
            return response

        client.responses.create = create_keeping_cut_answers  # type: ignore[method-assign]
        chat_create = client.chat.completions.create

        async def create_noting_finish(*args: Any, **kwargs: Any) -> Any:
            response = await chat_create(*args, **kwargs)
            call = _CALL.get()  # the model call this completion answers (``ChatModel``)
            if call is None:
                return response
            if kwargs.get("stream"):
                _watch(response, call)
            else:
                choices = getattr(response, "choices", None) or []
                call.finish = choices[0].finish_reason if choices else None
                call.refused = bool(choices) and getattr(choices[0].message, "refusal", None) is not None
            return response

        client.chat.completions.create = create_noting_finish  # type: ignore[method-assign]

    def chat_key(self, call: _ChatCall) -> str:
        """A key of this run's own for one model call's completion, given to its ``ModelResponse`` as
        ``request_id``, under which its finish reason, its calls not run and its being cut bare are noted.
        Not the ``x-request-id`` the SDK puts there: a server that sends none (or always the same one) made
        every completion share one key, and what one said was read as another's (an expert's answer cut
        before any text made the desk's next reply with calls end its run; agents run as tools at once could
        swap finish reasons). The header is kept in front of the key, for reading."""
        key = f"{call.request_id or 'no-request-id'}#portagent-{next(self._calls)}"
        if call.refused:  # the model refused, whatever it said ("" too: the SDK's converter drops that one)
            self.chat[key] = "content_filter"
        elif call.finish:
            self.chat[key] = call.finish
        return key

    def chat_finish(self, request_id: str | None) -> str | None:
        """The finish reason of the Chat Completions call with this request id (once) when it did not end
        normally (``chat_ended_early``), else None."""
        return chat_ended_early(self.chat.pop(request_id, None))

    def is_cut(self, response_id: str | None, request_id: str | None) -> bool:
        return (
            response_id in self.ids
            or (response_id, request_id) in self.refused
            or chat_ended_early(self.chat.get(request_id)) is not None
        )

    def finish(self, response_id: str | None, request_id: str | None) -> str | None:
        """The finish reason of an answer that did not end normally (once), else None: a refusal
        (``content_filter``), a Responses answer kept although incomplete, a completion's own reason."""
        chat = self.chat_finish(request_id)
        if (response_id, request_id) in self.refused:
            self.refused.discard((response_id, request_id))
            return "content_filter"
        if response_id in self.ids:
            return self.ids[response_id]
        return chat

    def without_calls(self, output: list[Any], response_id: str | None, request_id: str | None) -> list[Any]:
        """``output`` (a response's items, as openai-agents reads them) without its function calls when the
        answer was cut or refused (a refusal's text becomes the reply's text: ``refusal_as_text``), their
        names kept for the model call (``calls_not_run``); else ``output`` itself. Every tool portagent
        declares is a function (ToolSpecs, agents as tools, handoffs): no other item type is one the SDK
        would run here. Such an answer that says nothing is noted ``bare`` (``ended_bare``)."""
        key = (response_id, request_id)
        answered = refusal_as_text(output)
        if answered is not output:
            self.refused.add(key)
            output = answered
        if not self.is_cut(response_id, request_id):
            return output
        calls = [item for item in output if getattr(item, "type", None) == "function_call"]
        if calls:
            self.not_run[key] = [str(getattr(c, "name", "")) for c in calls]
            output = [item for item in output if getattr(item, "type", None) != "function_call"]
        if not _says_something(output):
            self.bare.add(key)
        return output

    def ended_bare(self, data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult | None:
        """openai-agents' ``invalid_final_output`` handler. An agent with an output schema whose cut or refused
        answer says nothing (``bare``: only calls, taken out; an empty refusal; a cut before any text) has no
        final output, and the SDK would ask the model again (and again, up to the turn limit): that answer
        ends the run with its text so far, ``""``, as on every provider. Any other answer without a final
        output is left to the SDK (None)."""
        responses = data.run_data.raw_responses
        key = (responses[-1].response_id, responses[-1].request_id) if responses else None
        if key in self.bare:
            self.bare.discard(key)
            return RunErrorHandlerResult(final_output="", include_in_history=False)
        return None

    def calls_not_run(self, response_id: str | None, request_id: str | None) -> list[str]:
        """The calls taken out of this answer (once), or none."""
        return self.not_run.pop((response_id, request_id), [])

    def response_without_calls(self, response: Any) -> Any:
        """A ``ModelResponse`` (unstreamed) without the calls of a cut answer."""
        response.output = self.without_calls(response.output, response.response_id, response.request_id)
        return response

    async def stream_without_calls(self, events: Any) -> Any:
        """A model's stream events, the calls of a cut answer taken out of its ``response.completed``. Each
        call's ``response.output_item.done`` is held back until then (and dropped with it): openai-agents
        falls back to those items when the final response holds no output, which would bring them back."""
        held: list[Any] = []
        async with aclosing(events) as stream:
            async for event in stream:
                kind = getattr(event, "type", None)
                if (
                    kind == "response.output_item.done"
                    and getattr(event.item, "type", None) == "function_call"
                ):
                    held.append(event)
                    continue
                if isinstance(event, ResponseCompletedEvent):
                    response = event.response
                    kept = self.without_calls(
                        response.output, response.id, getattr(response, "_request_id", None)
                    )
                    if kept is not response.output:  # cut or refused: its calls go with it
                        response.output, held = kept, []
                if kind in _TERMINAL:  # the calls of an answer not cut go on, just before its end
                    for waiting in held:
                        yield waiting
                    held = []
                yield event
        for waiting in held:  # a stream without its terminal event: the SDK fails it, as before
            yield waiting


def refusal_as_text(output: list[Any]) -> list[Any]:
    """``output`` with each message's refusal parts as text (``output``, the same list, when it holds none):
    what the model said is the reply's text, so the SDK ends the turn with it instead of raising
    ``ModelRefusalError``, and the conversation goes on with it."""
    if not any(_refusals(item) for item in output):
        return output
    return [
        item.model_copy(update={"content": [_as_text(part) for part in item.content]})
        if _refusals(item)
        else item
        for item in output
    ]


def _says_something(output: list[Any]) -> bool:
    """Whether the last message of ``output`` holds text: what openai-agents takes as the final output of an
    agent with an output schema (none, or ``""``, and it asks the model again)."""
    messages = [item for item in output if getattr(item, "type", None) == "message"]
    return bool(messages) and bool(ItemHelpers.extract_text(messages[-1]))


def _refusals(item: Any) -> bool:
    return getattr(item, "type", None) == "message" and any(
        getattr(part, "type", None) == "refusal" for part in getattr(item, "content", None) or []
    )


def _as_text(part: Any) -> Any:
    if getattr(part, "type", None) != "refusal":
        return part
    return ResponseOutputText(type="output_text", text=part.refusal or "", annotations=[], logprobs=[])


_TERMINAL = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "error", "response.error"}
)


class _WithoutCutCalls:
    """What both model classes add: a cut answer reaches openai-agents without its calls, unstreamed and
    streamed (``_events`` is the model's own event stream)."""

    _cut: CutAnswers

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._cut.response_without_calls(await self._response(*args, **kwargs))

    async def _response(self, *args: Any, **kwargs: Any) -> Any:
        return await super().get_response(*args, **kwargs)  # type: ignore[misc]

    async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        async with aclosing(self._cut.stream_without_calls(self._events(*args, **kwargs))) as events:
            async for event in events:
                yield event

    def _events(self, *args: Any, **kwargs: Any) -> Any:
        return super().stream_response(*args, **kwargs)  # type: ignore[misc]


class ResponsesModel(_WithoutCutCalls, OpenAIResponsesModel):
    """A cut answer as a completed one without its calls: unstreamed, ``CutAnswers.wrap`` marked it
    completed; streamed, its ``response.incomplete`` event becomes ``response.completed`` here."""

    def __init__(self, model: str, openai_client: openai.AsyncOpenAI, cut: CutAnswers) -> None:
        super().__init__(model=model, openai_client=openai_client)
        self._cut = cut

    async def _events(self, *args: Any, **kwargs: Any) -> Any:
        stream: Any = super()._events(*args, **kwargs)  # an async generator (it has aclose)
        async with aclosing(stream) as events:
            async for event in events:
                response = getattr(event, "response", None)
                if getattr(event, "type", None) == "response.incomplete" and self._cut.keep(response):
                    yield ResponseCompletedEvent(
                        type="response.completed", response=response, sequence_number=event.sequence_number
                    )
                    return  # the terminal event: the SDK's stream would raise if asked for more
                yield event


class ChatModel(_WithoutCutCalls, OpenAIChatCompletionsModel):
    """Chat Completions: a completion cut by ``length`` keeps its text (the SDK's own behaviour) but not its
    tool calls. Each model call notes what its completion said (``_CALL``, read by ``CutAnswers.wrap``'s
    client) and marks its ``ModelResponse`` with a key of its own (``CutAnswers.chat_key``)."""

    def __init__(self, model: str, openai_client: openai.AsyncOpenAI, cut: CutAnswers) -> None:
        super().__init__(model=model, openai_client=openai_client)
        self._cut = cut

    async def _response(self, *args: Any, **kwargs: Any) -> Any:
        call = _ChatCall()
        token = _CALL.set(call)
        try:
            response = await super()._response(*args, **kwargs)
        finally:
            _CALL.reset(token)
        call.request_id = response.request_id
        response.request_id = self._cut.chat_key(call)
        return response

    async def _events(self, *args: Any, **kwargs: Any) -> Any:
        call = _ChatCall()
        _CALL.set(call)  # this task's next completion is this call's (an async generator cannot reset it)
        async with aclosing(super()._events(*args, **kwargs)) as events:
            async for event in events:
                if isinstance(event, ResponseCompletedEvent):  # its _request_id reaches the ModelResponse
                    call.request_id = getattr(event.response, "_request_id", None)
                    event.response._request_id = self._cut.chat_key(call)
                yield event


@dataclass
class _ChatCall:
    """What one model call's Chat Completions answer said, as the client saw it."""

    finish: str | None = None
    """Its ``finish_reason`` (the unary body's, or the streamed chunks' as they passed)."""
    request_id: str | None = None
    """Its ``x-request-id``, when the server sent one."""
    refused: bool = False
    """Whether its message held a ``refusal`` (not null), whatever its text."""


_CALL: ContextVar[_ChatCall | None] = ContextVar("portagent_chat_call", default=None)
"""The model call of this task that the next completion answers: ``ChatModel`` sets it, the client's
``create`` (``CutAnswers.wrap``) notes into it. Concurrent model calls (agents run as tools) are other tasks,
each with its own."""


def _watch(stream: Any, call: _ChatCall) -> None:
    """A streamed completion's finish reason arrives in its last chunks: noted as they pass."""
    chunks = getattr(stream, "_iterator", None)
    if chunks is None:  # another openai version's stream: the reason stays unknown
        return

    async def noting() -> Any:
        async for chunk in chunks:
            for choice in getattr(chunk, "choices", None) or []:
                if choice.finish_reason:
                    call.finish = choice.finish_reason
                if getattr(getattr(choice, "delta", None), "refusal", None) is not None:
                    call.refused = True  # "" too: the SDK's stream handler drops an empty refusal
            yield chunk

    stream._iterator = noting()


class EndedBare(Exception):
    """An agent run as a tool, with an output schema, whose cut or refused answer says nothing: its run ends
    there with ``""`` (the answer so far), as on every provider, instead of asking its model again."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self.agent = agent
