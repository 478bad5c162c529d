"""The tools of a LangGraph agent's tool node, read into ToolSpecs: ``@tool`` functions
(``StructuredTool``) with the schema the model is sent, called through a shim as the tool node calls them
(``ainvoke``). What a portable run could not do is left out with its ``file:line``: a tool that pauses the
graph with ``interrupt()``, a parameter the graph injects (``InjectedState``…); a tool running another
graph (a sub-agent) is imported and flagged. Shared by ``from_langgraph`` and ``from_langgraph_graph``.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

from portagent.migration.draft import DraftTool
from portagent.migration.from_langgraph_node import code_names
from portagent.migration.importing import (
    ReaderState,
    refuse_schema_gap,
    schema_gap,
    shim_function,
    source_alias,
    tool_object_ref,
    where,
)


def read_tool(t: Any, ref: str, reader: ReaderState) -> DraftTool | None:
    from langchain_core.tools import StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    subject = f"tool {getattr(t, 'name', '?')!r}"
    if not isinstance(t, StructuredTool):
        reader.report.add(
            "not_portable",
            f"{subject} ({type(t).__qualname__})",
            "not imported: only @tool functions (StructuredTool) point at a Python function",
        )
        return None
    fn: Any = t.coroutine if t.coroutine is not None else t.func
    if fn is None:
        reader.report.add("not_portable", subject, "not imported: a StructuredTool without a function")
        return None
    if t.return_direct:
        reader.report.add(
            "not_portable",
            f"return_direct=True on {subject}",
            "not imported as such: the model always sees tool results and answers itself",
        )
    schema = convert_to_openai_tool(t)["function"]["parameters"]  # what the model is sent
    gap = schema_gap(schema)
    if gap:
        refuse_schema_gap(reader.report, subject, gap)
        return None
    paused = pauses(fn)
    if paused is not None:
        reader.report.add(
            "not_portable",
            f"{subject} ({where(fn)})",
            f"not imported: it pauses the graph with LangGraph's interrupt() ({paused}), which only a "
            "checkpointed LangGraph run can resume: every portable call of it would fail. For a human "
            "check before the call, set requires_approval: true on its ToolSpec (portagent asks before "
            "running it) and give the model a version of the function without interrupt()",
        )
        return None
    injected = _injected_params(t)
    if injected:
        reader.report.add(
            "not_portable",
            f"{subject} ({where(fn)})",
            f"not imported: parameter(s) {', '.join(injected)} are injected by the graph at run time "
            "(InjectedToolArg, InjectedState, InjectedStore or InjectedToolCallId), never sent by the model; "
            "a portable tool gets only its arguments (and a ToolContext: docs/migration.md). Rewrite it to "
            "read them from ToolContext, or give the model a tool without them",
        )
        return None
    handler = tool_object_ref(reader.report, subject, t, fn, ref)
    if handler is None:
        return None
    subs = graphs_used(fn)
    if subs:
        reader.report.add(
            "review",
            f"{subject} ({where(fn)})",
            f"it runs the LangGraph graph(s) {', '.join(n for n, _ in subs)} (a sub-agent wrapped as a tool): "
            "imported as a tool whose handler still runs that native graph and its model, outside "
            f"portagent; to port the sub-agent, import it too ({fn.__module__}:{subs[0][0]})"
            " and make it a "
            "sub-agent of this one (agent_as_tool)",
        )
    name = reader.tool_names.take(t.name)
    if name != t.name:
        reader.report.add("changed", subject, f"renamed {name!r}")
    # Called as the graph's tool node calls it (``ainvoke``): the tool's args_schema converts the arguments
    # and fills a RunnableConfig parameter, and a parameter named ``context`` is just an argument.
    mod, _, target = handler.partition(":")
    alias = source_alias(mod)
    reader.shim_imports[mod] = f"import {mod} as {alias}"
    fname = shim_function(name)
    why = "is called as LangGraph's tool node calls it (ainvoke: its args_schema converts the arguments)"
    reader.report.add("note", subject, f"handler is a shim ({fname}) calling {mod}:{target}: it {why}")
    return DraftTool(
        name=name,
        description=t.description or "",
        input_schema=dict(schema),
        handler="",
        origin=f"langchain StructuredTool {t.name} ({fn.__module__}.{fn.__qualname__})",
        shim=(
            f"async def {fname}(**args):\n"
            f'    """{mod}.{target} {why}."""\n'
            f"    return await call_langchain_tool({alias}.{target}, args)\n"
        ),
    )


def pauses(fn: Any) -> str | None:
    """Where ``fn`` calls LangGraph's ``interrupt()`` — itself, or a function of its own module it calls
    (two levels down) — read from the names its code uses; None when it does not."""
    from langgraph import types as lg_types

    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(inspect.unwrap(fn), 0)]
    while todo:
        func, depth = todo.pop()
        code = getattr(func, "__code__", None)
        if code is None or id(func) in seen:
            continue
        seen.add(id(func))
        names = code_names(code)
        scope = dict(getattr(func, "__globals__", {}))
        with contextlib.suppress(TypeError, ValueError):
            scope.update(inspect.getclosurevars(func).nonlocals)
        for n in sorted(names):
            value = scope.get(n)
            if value is lg_types.interrupt or (value is lg_types and "interrupt" in names):
                return f"{func.__qualname__}, {where(func)}"
            if (
                depth < 2
                and inspect.isfunction(value)
                and value.__module__ == getattr(func, "__module__", None)
            ):
                todo.append((value, depth + 1))
    return None


def _injected_params(t: Any) -> list[str]:
    """The tool's parameters the model is never sent (what the graph injects): those of its input schema
    that its tool-call schema leaves out. A ``RunnableConfig`` parameter is in neither (``ainvoke`` fills it)."""
    try:
        every = set(t.get_input_schema().model_fields)
        sent = set(t.tool_call_schema.model_fields)
    except Exception:  # a schema that is not a pydantic model: nothing to compare
        return []
    return sorted(every - sent)


def graphs_used(fn: Any) -> list[tuple[str, Any]]:
    """(name, graph) for each LangGraph graph (a ``Pregel``) the function's code names."""
    from langgraph.pregel import Pregel

    code = getattr(inspect.unwrap(fn), "__code__", None) if fn is not None else None
    if code is None:
        return []
    scope = dict(getattr(inspect.unwrap(fn), "__globals__", {}))
    with contextlib.suppress(TypeError, ValueError):
        scope.update(inspect.getclosurevars(inspect.unwrap(fn)).nonlocals)
    names = set(code.co_names) | set(code.co_freevars)
    return [(n, scope[n]) for n in sorted(names) if isinstance(scope.get(n), Pregel)]
