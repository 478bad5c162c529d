"""Helpers for the handler shims ``portagent import`` generates (``portagent_shims_<agent>_<hash>.py``).

portagent calls a handler as ``handler(**args)`` and takes its return value as the output (ADR 0004).
Some native tool functions are written for another convention; a generated shim calls the original
function unchanged and converts only at the boundary:

- ``call_original``: calls the original function and awaits the result when it is a coroutine;
- ``openai_context`` / ``adk_context``: the function takes the SDK's context object (openai-agents
  ``RunContextWrapper`` / ``ToolContext``, ADK ``ToolContext``): the shim declares portagent's
  ``ToolContext`` (so the gateway passes one on every provider) and hands the function an object of the
  shape it expects, backed by ``ToolContext.state`` (the per-session state mapping):
  ``wrapper.context.<field>`` and ``tool_context.state[...]`` read and write that mapping;
- ``from_mcp_content``: a Claude SDK MCP tool handler takes one ``args`` dict and returns MCP content
  (``{"content": [{"type": "text", "text": …}], "is_error": bool}``); a text block holding JSON becomes
  that value, other text ``{"text": …}``, ``is_error`` a ``handler_error`` failure;
- ``call_anthropic_tool`` / ``call_langchain_tool``: an anthropic ``@beta_tool`` or a LangChain tool is
  called through its SDK's own entry point (``call`` / ``ainvoke``), so its arguments are checked and
  converted as the SDK does before the function sees them (a pydantic model, a date, an enum — never the
  raw JSON); what it returns is converted as above;
- ``call_openai_tool`` / ``call_adk_tool``: an openai-agents ``@function_tool`` function or a google-adk
  function tool gets its arguments as its SDK passes them: openai-agents' own ``function_schema`` model
  and ``to_call_args`` (pydantic models, enums, dates, ``*args`` / ``**kwargs``), ADK's own
  ``FunctionTool.run_async`` (its pydantic-model conversion, and the rest when ADK's argument validation
  is switched on). ``passes_json_through`` tells the importers when no conversion can change anything,
  so the handler can be the original function itself;
- ``placeholder_keys``: the shim module imports the original modules inside it, so a program that builds
  an SDK client or a chat model at its top level (``ChatOpenAI()``, ``AsyncOpenAI()``, ``genai.Client()``
  raise without a key) imports in an emulator or replay run, which needs no key.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import threading
import types
import typing
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from portagent.tools.observations import ToolFailure
from portagent.tools.tool_context import ToolContext

KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")
"""Keys SDK clients and chat models require when built (``ChatOpenAI()`` raises without one): a program
that builds them at its top level is imported — by ``portagent import`` and by the generated shim module
at run time — with a placeholder for each of these not set."""

PLACEHOLDER_KEY = "portagent-import-placeholder"
"""The value a key variable holds while a native module is imported without it. Not a key: the client
the module builds with it is the native program's own, which no shim calls (a shim calls the original
tool functions); portagent's model calls use the run's endpoint key."""

_ENV_LOCK = threading.RLock()  # two imports in two threads would otherwise restore each other's variables


@contextlib.contextmanager
def placeholder_keys() -> Iterator[None]:
    """Set ``PLACEHOLDER_KEY`` for each of ``KEY_VARIABLES`` that is unset (or empty) while the block runs —
    the import of a native module — and restore each right after. A key the user set is never touched; a
    variable the module itself set while importing keeps the module's value."""
    with _ENV_LOCK:
        missing = {k: os.environ.get(k) for k in KEY_VARIABLES if not os.environ.get(k)}
        for k in missing:
            os.environ[k] = PLACEHOLDER_KEY
        try:
            yield
        finally:
            for k, before in missing.items():
                if os.environ.get(k) != PLACEHOLDER_KEY:
                    continue
                if before is None:
                    del os.environ[k]
                else:
                    os.environ[k] = before


async def call_original(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, awaited when it returns an awaitable. ``fn`` is positional-only: the
    keyword arguments are a tool's own, and a tool may have a parameter named ``fn``."""
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _block_text(block: Any) -> str | None:
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def from_mcp_content(result: Any) -> Any:
    """An MCP tool result (as SDK MCP tool handlers return it) → a portagent handler value."""
    if not isinstance(result, dict):
        return result
    blocks = result.get("content") or []
    texts = [t for t in (_block_text(b) for b in blocks) if t is not None]
    text = "\n".join(texts)
    if result.get("is_error") or result.get("isError"):
        raise ToolFailure("handler_error", text or "the tool reported an error")
    if len(blocks) != len(texts):
        kinds = sorted({str(b.get("type")) for b in blocks if isinstance(b, dict)} - {"text"})
        return {"text": text, "non_text_content": kinds}
    if len(texts) == 1:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return {"text": text}


@functools.cache
def _validating(fn: Callable[..., Any]) -> Callable[..., Any]:
    import pydantic

    return pydantic.validate_call(fn)


async def call_anthropic_tool(target: Any, /, **args: Any) -> Any:
    """Call an anthropic ``@beta_tool`` and convert what it returns: its ``tool_result`` content.

    ``target`` is the SDK's tool object (its ``call`` checks and converts the arguments as the tool
    runner does: a pydantic model, a date or an enum parameter gets one, not the raw JSON), or the plain
    function, which is given the same conversion (``pydantic.validate_call``, as the SDK builds it).
    JSON text is read back as its value (the gateway encodes every output as JSON for every provider),
    other text stays text, content blocks convert as MCP content does; raising the SDK's ``ToolError``
    (its way to answer with ``is_error``) is a handler error. ``target`` is positional-only: ``args`` are
    the tool's own keyword arguments, and a tool may have a parameter named ``target``."""
    try:
        if callable(getattr(target, "call", None)) and hasattr(target, "to_dict"):
            result = target.call(args)
            if inspect.isawaitable(result):
                result = await result
        else:
            result = await call_original(_validating(target), **args)
    except Exception as e:
        if type(e).__name__ == "ToolError" and type(e).__module__.startswith("anthropic."):
            raise ToolFailure("handler_error", str(e)) from e
        raise
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    if isinstance(result, list):
        return from_mcp_content({"content": result})
    return result


@functools.cache
def _as_langchain_tool(fn: Callable[..., Any]) -> Any:
    from langchain_core.tools import tool

    return tool(fn)


async def call_langchain_tool(target: Any, args: dict[str, Any]) -> Any:
    """Call a LangChain tool as LangGraph's tool node does: ``ainvoke`` with the arguments, so the tool's
    ``args_schema`` converts them (pydantic models, dates, enums) and a ``RunnableConfig`` parameter is
    filled in. ``target``: the tool object, or a plain function the agent was given (made a tool the way
    LangGraph makes it). Returns what the function returned."""
    from langchain_core.tools import BaseTool

    tool = target if isinstance(target, BaseTool) else _as_langchain_tool(target)
    return await tool.ainvoke(args)


_PLAIN_TYPES: tuple[Any, ...] = (str, int, float, bool, type(None), Any, object, list, dict)


def _plain(hint: Any) -> bool:
    """A type whose values both SDKs pass on as JSON gives them: text, numbers (an int for a float
    parameter compares equal to the float the SDK would make of it), booleans, and lists, string-keyed
    dicts, unions and literals of those. Anything else — a pydantic model, an enum, a date, a TypedDict,
    ``Annotated`` metadata — may be converted, so it is not plain."""
    if hint is inspect.Parameter.empty or any(hint is t for t in _PLAIN_TYPES):
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return all(type(a) in (str, int, bool) for a in args)
    if origin in (typing.Union, types.UnionType):
        return all(_plain(a) for a in args)
    if origin is list:
        return all(_plain(a) for a in args)
    if origin is dict:
        return len(args) == 2 and args[0] is str and _plain(args[1])
    return False


def passes_json_through(fn: Callable[..., Any], skip: frozenset[str] = frozenset()) -> bool:
    """Whether calling ``fn(**arguments)`` with the tool call's JSON arguments gives it what its SDK would:
    every parameter (but those in ``skip``, the SDK's context parameter) is keyword-bindable and plain
    (``_plain``). False when in doubt: a shim through the SDK's conversion is then always right."""
    try:
        params = inspect.signature(fn).parameters
        hints = typing.get_type_hints(fn, include_extras=True)  # Annotated metadata may convert
    except Exception:  # unresolvable annotations, builtins: let the SDK's own code decide
        return False
    for name, p in params.items():
        if name in skip:
            continue
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return False
        if not _plain(hints.get(name, p.annotation)):
            return False
    return True


@functools.cache
def _openai_schema(fn: Callable[..., Any], strict: bool) -> Any:
    from agents.function_schema import function_schema

    # function_tool builds the schema of a callable instance from its __call__ (its normalisation step)
    obj: Any = fn
    target = obj if inspect.isroutine(obj) or inspect.isclass(obj) else obj.__call__
    return function_schema(target, use_docstring_info=False, strict_json_schema=strict)


async def call_openai_tool(
    fn: Callable[..., Any], /, args: dict[str, Any], context: Any = None, *, strict: bool
) -> Any:
    """Call an openai-agents ``@function_tool`` function as the SDK's ``on_invoke_tool`` does: the SDK's own
    ``function_schema(fn, strict_json_schema=strict)`` model validates the arguments and its
    ``to_call_args`` turns them into the call (a pydantic model, an enum, a date get one; ``*args`` and
    ``**kwargs`` are spread), with ``context`` (the run context) first when the function takes one.
    Arguments the SDK would refuse (its ``ModelBehaviorError``) are a ``validation_error``."""
    import pydantic
    from agents.exceptions import ModelBehaviorError

    schema = _openai_schema(fn, strict)
    try:
        parsed = schema.params_pydantic_model(**args)
        positional, keywords = schema.to_call_args(parsed)
    except (pydantic.ValidationError, ModelBehaviorError) as e:
        raise ToolFailure(
            "validation_error", f"invalid arguments for {getattr(fn, '__name__', 'the tool')}: {e}"
        ) from e
    if schema.takes_context:
        positional = [context, *positional]
    return await call_original(fn, *positional, **keywords)


@functools.cache
def _adk_tool(fn: Callable[..., Any]) -> Any:
    from google.adk.tools.function_tool import FunctionTool

    return FunctionTool(fn)


class _NoAdkContext:
    """What ``FunctionTool.run_async`` is given for a function that takes no ADK context: it reads
    ``function_call_id`` (falsy: no live input stream) and looks the rest up with defaults."""

    function_call_id = None


async def call_adk_tool(fn: Callable[..., Any], /, args: dict[str, Any], tool_context: Any = None) -> Any:
    """Call a google-adk function tool through ADK's own ``FunctionTool(fn).run_async``: its arguments are
    converted as ADK converts them (a dict becomes the pydantic model the parameter names, a list of
    dicts a list of models …), ``tool_context`` (``adk_context``) is passed under the parameter ADK
    detects for it. What ADK answers the model itself (``{"error": …}`` for a missing argument) is
    returned as it is."""
    return await _adk_tool(fn).run_async(args=args, tool_context=tool_context or _NoAdkContext())


async def call_mcp_handler(handler: Callable[[dict[str, Any]], Any], args: dict[str, Any]) -> Any:
    """Call a Claude SDK MCP tool handler with its ``args`` dict and convert what it returns."""
    return from_mcp_content(await call_original(handler, args))


class StateObject:
    """``wrapper.context`` of an imported openai-agents tool: attribute (and item) access over the
    session state. A field never written reads from the run's context (``RunRequest.context``), else
    ``None`` — the usual default of the dataclass or pydantic model the SDK's examples pass as context."""

    __slots__ = ("_fallback", "_state")

    def __init__(self, state: MutableMapping[str, Any], fallback: dict[str, Any]) -> None:
        object.__setattr__(self, "_state", state)
        object.__setattr__(self, "_fallback", fallback)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        state: MutableMapping[str, Any] = object.__getattribute__(self, "_state")
        if name in state:
            return state[name]
        return object.__getattribute__(self, "_fallback").get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._state[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)

    def __setitem__(self, name: str, value: Any) -> None:
        self._state[name] = value

    def get(self, name: str, default: Any = None) -> Any:
        value = self.__getattr__(name)
        return default if value is None else value

    def __repr__(self) -> str:
        return f"StateObject({dict(self._state)!r})"


def openai_context(tc: ToolContext) -> Any:
    """An openai-agents ``ToolContext`` (a ``RunContextWrapper``) for an imported function: ``.context``
    is the session state (``StateObject``), ``tool_name`` / ``tool_call_id`` / ``tool_arguments`` are
    this call's."""
    import json

    from agents.tool_context import ToolContext as OpenAIToolContext

    return OpenAIToolContext(
        context=StateObject(tc.state, tc.context),
        tool_name=tc.tool,
        tool_call_id=tc.call_id,
        tool_arguments=json.dumps(tc.arguments, sort_keys=True),
    )


class AdkState(MutableMapping[str, Any]):
    """ADK's ``tool_context.state`` over the session state mapping (``state[k]``, ``get``, ``in``,
    ``update``, ``to_dict``, ``has_delta``)."""

    def __init__(self, state: MutableMapping[str, Any]) -> None:
        self._state = state

    def __getitem__(self, key: str) -> Any:
        return self._state[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: str) -> None:
        del self._state[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._state)

    def has_delta(self) -> bool:
        return bool(self._state)


class AdkToolContext:
    """ADK's ``ToolContext`` for an imported function: ``state`` (the session state), ``agent_name``,
    ``function_call_id``, ``invocation_id``. What has no portable equivalent (``actions``, artifacts,
    memory, credentials) raises ``AttributeError`` naming it; import-report.md lists where it is used."""

    def __init__(self, tc: ToolContext) -> None:
        self.portagent = tc
        self.state = AdkState(tc.state)
        self.agent_name = tc.agent
        self.function_call_id = tc.call_id
        self.invocation_id = tc.run_id

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"tool_context.{name} (google-adk) has no portable equivalent in portagent; only "
            "state, agent_name, function_call_id and invocation_id are given (see import-report.md)"
        )


def adk_context(tc: ToolContext) -> AdkToolContext:
    return AdkToolContext(tc)
