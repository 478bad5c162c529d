"""Reading a LangGraph prebuilt ReAct agent (langgraph 1.2, langgraph-prebuilt 1.1) into an ``ImportDraft``.

A compiled LangGraph graph is nodes of arbitrary code; what is read exactly is the graph whose nodes
LangGraph itself wrote: ``langgraph.prebuilt.create_react_agent(model, tools, prompt=...)`` — nodes
``agent`` (the chat model bound to the tools, behind the prompt) and ``tools`` (a ``ToolNode``). A
hand-built ``StateGraph`` (a model node, a ``ToolNode``, their routes) is read by ``from_langgraph_graph``
with what it cannot read reported; the prebuilt agent's pre/post-model hooks are refused with one message.
This module finds the graph in a program and reads what both kinds share: the chat model and its
settings, the tools, the graph's options.

| LangGraph | portagent |
|---|---|
| graph ``name`` (when set) | agent ``name`` |
| ``prompt`` (a string or a ``SystemMessage``) | ``instructions`` |
| ``model``: ``ChatOpenAI`` / ``ChatAnthropic`` / ``ChatGoogleGenerativeAI`` | ``models.langgraph: vendor:id`` and that vendor's provider id (``models.openai`` / ``anthropic`` / ``adk``) |
| its ``temperature`` / ``max_tokens`` when the program set them (``_authored``) | shared settings, forced |
| ``@tool`` functions (``StructuredTool``) | ToolSpecs: the schema the model is sent, handler ``module:name.func`` (``.coroutine`` when async) |

One internal is read, here only: ``create_react_agent`` keeps its model and prompt in the closure of the
``agent`` node's function (``static_model``, and the prompt's ``_system_message``); they are read with
``inspect.getclosurevars``. If that shape changes, the import refuses with one message instead of guessing
(tests/migration/test_import_new_runtimes.py pins it).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import warnings
from typing import Any

from portagent.adapters.base import package_version
from portagent.contracts.errors import UsageError
from portagent.migration.draft import DraftAgent, DraftTool, ImportDraft
from portagent.migration.importing import (
    ReaderState,
    a_type,
    other_sdk_hint,
    placeholder_instructions,
    refuse_schema_gap,
    schema_gap,
    shim_function,
    source_alias,
    tool_object_ref,
    where,
)
from portagent.migration.report import ImportReport

EXPECTED = (
    "a compiled graph made by langgraph.prebuilt.create_react_agent(model, tools, prompt=...) with nodes "
    "'agent' and 'tools' (docs/migration.md)"
)
_PREBUILT_EXTRA_NODES = frozenset({"generate_structured_response", "pre_model_hook", "post_model_hook"})
"""Nodes ``create_react_agent`` itself adds for ``response_format`` and the model hooks."""

_VENDORS = {
    "ChatOpenAI": ("openai", "openai", "model_name"),
    "AzureChatOpenAI": ("openai", "openai", "model_name"),
    "ChatAnthropic": ("anthropic", "anthropic", "model"),
    "ChatGoogleGenerativeAI": ("google_genai", "adk", "model"),
}
"""Chat model class → (models.langgraph vendor, the portagent provider of that wire, model id field)."""


def read_langgraph(ref: str, obj: Any) -> ImportDraft:
    """The draft of a compiled LangGraph graph or a program building one found at ``ref`` (``importing.import_native`` turns what no reader here
    foresaw into one message)."""
    import types

    from langgraph.graph import StateGraph
    from langgraph.graph.state import CompiledStateGraph

    if isinstance(obj, types.ModuleType):
        ref, obj = _find_graph(ref, obj)
    elif isinstance(obj, StateGraph):
        obj = _compile(ref, obj)
    if not isinstance(obj, CompiledStateGraph):
        raise UsageError(
            f"{ref} is {a_type(obj)}; --from langgraph reads {EXPECTED}{other_sdk_hint(obj, 'langgraph')}"
        )
    nodes = sorted(n for n in obj.nodes if n != "__start__")
    prebuilt = "agent" in nodes and set(nodes) - {"agent", "tools"} <= {"generate_structured_response"}
    ours = "agent" in nodes and _is_prebuilt_agent(obj.nodes["agent"].bound)
    if ours and not prebuilt:
        raise UsageError(
            f"{ref} is a compiled graph with nodes {', '.join(nodes)}; --from langgraph reads {EXPECTED}: "
            "create_react_agent's pre/post-model hook nodes are code of the program's, not read; write the "
            "hook's effect by hand after importing the agent without them"
        )
    if not ours:
        from portagent.migration.from_langgraph_graph import read_built_graph

        return read_built_graph(ref, obj, nodes)
    static_model, prompt = _agent_node(ref, obj.nodes["agent"].bound)
    report = ImportReport(sdk=f"langgraph {package_version('langgraph')}", source=ref)
    reader = ReaderState(report)
    name = _graph_name(ref, obj, reader)
    draft = DraftAgent(name=name, instructions=_instructions(prompt, name, report))
    _model(static_model, draft, report)
    node_tools = getattr(obj.nodes["tools"].bound, "tools_by_name", {}) if "tools" in obj.nodes else {}
    for t in node_tools.values():
        tool = _tool(t, ref, reader)
        if tool is not None:
            draft.tools.append(tool)
    _bound_options(static_model, set(node_tools), draft, report)
    if "generate_structured_response" in obj.nodes:
        _response_format(obj.nodes["generate_structured_response"].bound, draft, report)
    _graph_options(obj, draft, report)
    return reader.draft("langgraph", draft)


def _graph_name(ref: str, obj: Any, reader: ReaderState) -> str:
    raw = obj.name if obj.name and obj.name != "LangGraph" else ref.rpartition(":")[2].split(".")[-1]
    name = reader.agent_names.take(raw)
    if name != raw:
        reader.report.add(
            "changed", f"graph name {raw!r}", f"renamed {name!r} (an agent name is an identifier)"
        )
    return name


def _is_prebuilt_agent(runnable: Any) -> bool:
    """The ``agent`` node is the one ``create_react_agent`` writes (not a node of the program's own)."""
    func = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
    return getattr(func, "__module__", "") == _PROMPT_MODULE


def _compile(ref: str, builder: Any) -> Any:
    """An uncompiled ``StateGraph``: compiled here (building it runs nothing of the program's)."""
    try:
        return builder.compile()
    except Exception as e:  # an incomplete graph (no entry point, a dangling edge)
        raise UsageError(f"{ref}: its StateGraph does not compile ({type(e).__name__}: {e})") from None


def _find_graph(ref: str, module: Any) -> tuple[str, Any]:
    """The one agent graph a module defines at its top level: a compiled graph, or a ``StateGraph``
    builder nothing compiled. A graph only other graphs' tools call (a sub-agent) is not a candidate."""
    from langgraph.graph import StateGraph
    from langgraph.graph.state import CompiledStateGraph

    graphs: dict[int, tuple[str, Any]] = {}
    builders: dict[int, tuple[str, Any]] = {}
    for attr, value in vars(module).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, CompiledStateGraph):
            graphs.setdefault(id(value), (attr, value))
        elif isinstance(value, StateGraph):
            builders.setdefault(id(value), (attr, value))
    for _, g in graphs.values():  # a builder already compiled is its graph
        builders.pop(id(getattr(g, "builder", None)), None)
    subs = {id(sub) for _, g in graphs.values() for sub in _graphs_called_by_tools(g)}
    found = [v for k, v in graphs.items() if k not in subs] + list(builders.values())
    if not found and graphs:
        found = list(graphs.values())
    file = where(module) if hasattr(module, "__file__") else module.__name__
    if not found:
        builders_in = _functions_building_graphs(module)
        raise UsageError(
            f"{ref}: no agent found in {file.rpartition(':')[0] or file}: no compiled LangGraph graph "
            "(or StateGraph) at the module's top level"
            + (f"; it is built inside {', '.join(builders_in)} (run only when called)" if builders_in else "")
            + "; build it at the top level (e.g. `agent = create_react_agent(...)`) and import it again, or "
            "name it (MODULE:OBJECT)"
        )
    if len(found) > 1:
        raise UsageError(
            f"{ref}: {len(found)} agent graphs found; choose one: "
            + ", ".join(f"{module.__name__}:{attr}" for attr, _ in found)
        )
    attr, value = found[0]
    new_ref = f"{module.__name__}:{attr}"
    return new_ref, _compile(new_ref, value) if isinstance(value, StateGraph) else value


def _functions_building_graphs(module: Any) -> list[str]:
    """``name (file:line)`` of the module's functions that call ``create_react_agent``, ``create_agent``,
    ``StateGraph`` or ``.compile()`` (a graph built only when they run)."""
    import ast

    from portagent.migration.static_read import call_chain, module_tree, qualnames

    parsed = module_tree(module)
    if parsed is None:
        return []
    tree, _, file = parsed
    out = []
    for fn, qualname in qualnames(tree).items():
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        calls = [call_chain(n)[-1] for n in ast.walk(fn) if isinstance(n, ast.Call)]
        if {"create_react_agent", "create_agent", "StateGraph", "compile"} & set(calls):
            out.append(f"{qualname} ({file}:{fn.lineno})")
    return out[:5]


def _graphs_called_by_tools(graph: Any) -> list[Any]:
    """Graphs the tools of ``graph`` call (sub-agents wrapped as tools), read from the names their
    functions use."""
    out: list[Any] = []
    for node in getattr(graph, "nodes", {}).values():
        for t in getattr(node.bound, "tools_by_name", {}).values():
            fn = getattr(t, "coroutine", None) or getattr(t, "func", None)
            out.extend(g for _, g in _graphs_used(fn))
    return out


def _graphs_used(fn: Any) -> list[tuple[str, Any]]:
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


def _node_function(runnable: Any) -> Any:
    return getattr(runnable, "func", None) or getattr(runnable, "afunc", None)


def _response_format(runnable: Any, draft: DraftAgent, report: ImportReport) -> None:
    """``create_react_agent(..., response_format=Schema)``: the schema (a pydantic model, a JSON schema
    dict, or a ``(prompt, schema)`` pair) → ``output_schema``."""
    func = _node_function(runnable)
    try:
        found = inspect.getclosurevars(func).nonlocals if func is not None else {}
    except TypeError:
        found = {}
    fmt = found.get("response_format")
    subject = f"response_format of agent {draft.name}"
    if isinstance(fmt, tuple) and len(fmt) == 2:
        report.add(
            "not_portable",
            f"{subject}: its prompt {str(fmt[0])[:60]!r}",
            "not imported: the structured answer is the agent's own final answer in portagent",
        )
        fmt = fmt[1]
    schema: Any = None
    try:
        if isinstance(fmt, dict):
            schema = fmt.get("schema", fmt) if "json_schema" not in fmt else fmt["json_schema"].get("schema")
        elif isinstance(fmt, type) and hasattr(fmt, "model_json_schema"):
            schema = fmt.model_json_schema()
    except Exception:
        schema = None
    gap = schema_gap(schema) if isinstance(schema, dict) else "it is not a pydantic model or a JSON schema"
    if gap:
        report.add("not_portable", subject, f"not imported: {gap}; write output_schema by hand")
        return
    draft.output_schema = dict(schema)
    report.add(
        "changed",
        f"{subject} ({getattr(fmt, '__qualname__', 'a JSON schema')})",
        "imported as output_schema: the agent's final answer is checked against it (LangGraph asked the "
        "model for it in a separate call after the loop; portagent asks for it as the answer itself)",
    )


def _agent_node(ref: str, runnable: Any) -> tuple[Any, Any]:
    """(``static_model``, the prompt runnable) from the ``agent`` node's closure, or one refusal."""
    func = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
    try:
        found = inspect.getclosurevars(func).nonlocals if func is not None else {}
    except TypeError:
        found = {}
    if found.get("is_dynamic_model"):
        raise UsageError(
            f"{ref}: create_react_agent was given a function that picks the model per call (a dynamic "
            "model); --from langgraph reads a fixed chat model only"
        )
    model = found.get("static_model")
    steps = getattr(model, "steps", None)
    if not isinstance(steps, list) or len(steps) != 2:
        raise UsageError(
            f"{ref}: its 'agent' node is not the one create_react_agent writes in langgraph-prebuilt "
            f"{package_version('langgraph-prebuilt')} (no prompt | model sequence in its closure); "
            f"--from langgraph reads {EXPECTED}"
        )
    return steps[1], steps[0]


def _instructions(prompt: Any, name: str, report: ImportReport) -> str:
    """The prompt ``create_react_agent`` was given, read back from the prompt step it wrote: a string or a
    ``SystemMessage`` (kept in that step's closure), no prompt (a step of its own that only passes the
    messages on), or anything else — a function or runnable of the program's, computed at run time."""
    func = getattr(prompt, "func", None) or getattr(prompt, "afunc", None)
    ours = getattr(func, "__module__", "") == _PROMPT_MODULE and getattr(prompt, "name", "") == "Prompt"
    try:
        found = inspect.getclosurevars(func).nonlocals if ours and func is not None else {}
    except TypeError:
        found = {}
    if ours:
        message = found.get("_system_message", found.get("prompt"))
        text = _message_text(message)
        left = _blocks_left_out(message)
        if left:
            report.add(
                "not_portable",
                f"system prompt of agent {name}: " + "; ".join(left),
                "not imported: instructions are text; "
                + ("its text blocks were joined into them" if text else "a placeholder was written"),
            )
        if text:
            return text
        report.add(
            "changed",
            f"agent {name} has no prompt" + (" (an empty one)" if message is not None else ""),
            "a placeholder marked [instructions to write] was written",
        )
        return placeholder_instructions(name, "the LangGraph agent had no prompt")
    what = getattr(func, "__qualname__", None) or type(prompt).__qualname__
    report.add(
        "not_portable",
        f"prompt of agent {name} ({what}, {where(func) if func is not None else 'a runnable'})",
        "not imported: a prompt computed at run time; a placeholder was written",
    )
    return placeholder_instructions(name, "the LangGraph agent computed its prompt at run time")


_PROMPT_MODULE = "langgraph.prebuilt.chat_agent_executor"
"""Where ``create_react_agent`` writes its own prompt step (a string, a SystemMessage, or none)."""


def _message_text(message: Any) -> str | None:
    """A system message's text: its string content, or its text blocks joined (None when it has none)."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, list):
        parts = [
            b if isinstance(b, str) else b.get("text", "")
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        ]
        text = "\n\n".join(p for p in parts if p.strip())
        return text or None
    return None


_TEXT_BLOCK_KEYS = frozenset({"type", "text", "id"})
"""What a text block carries that instructions keep (``id`` is LangChain's own bookkeeping)."""


def _blocks_left_out(message: Any) -> list[str]:
    """What ``_message_text`` does not carry over from a system message's content blocks: blocks other
    than text (an image, a document…) and what a text block carries beside its text (``cache_control``,
    ``citations``…), each named with its block's place (1-based)."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        return []
    left = []
    for i, block in enumerate(content, 1):
        if isinstance(block, str):
            continue
        if not isinstance(block, dict) or block.get("type") != "text":
            kind = block.get("type", "?") if isinstance(block, dict) else type(block).__name__
            left.append(f"block {i} ({kind})")
            continue
        extra = sorted(set(block) - _TEXT_BLOCK_KEYS)
        if extra:
            left.append(f"{', '.join(extra)} on text block {i}")
    return left


def _model(model: Any, draft: DraftAgent, report: ImportReport) -> None:
    chat = getattr(model, "bound", model)  # bind_tools wraps the chat model in a binding
    known = _VENDORS.get(type(chat).__name__) or next(
        (_VENDORS[c.__name__] for c in type(chat).__mro__ if c.__name__ in _VENDORS), None
    )
    if known is None:
        report.add(
            "not_portable",
            f"chat model {type(chat).__qualname__} on agent {draft.name}",
            "not imported: models.langgraph names openai:, anthropic: or google_genai: models; set it yourself",
        )
        return
    vendor, provider, field = known
    model_id = getattr(chat, field, None)
    if not isinstance(model_id, str) or not model_id:
        report.add(
            "not_portable", f"chat model on agent {draft.name}", "no model id found; set models.langgraph"
        )
        return
    model_id = model_id.removeprefix("models/")
    draft.models["langgraph"] = f"{vendor}:{model_id}"
    draft.models[provider] = model_id
    if vendor == "openai" and getattr(chat, "use_responses_api", None) is not True:
        # ChatOpenAI uses Chat Completions unless told otherwise (or a Responses-only feature is set)
        draft.models["openai_api"] = "chat_completions"
        report.add(
            "changed",
            f"ChatOpenAI of agent {draft.name}",
            "kept as models.openai_api: chat_completions (ChatOpenAI's API; an OpenAI-only setting)",
        )
    shared = (
        ("temperature", "temperature"),
        ("max_tokens", "max_tokens"),
        ("max_output_tokens", "max_tokens"),
    )
    given = _authored(chat, field)
    _other_settings(chat, given - {field, "use_responses_api", *(src for src, _ in shared)}, draft, report)
    for src, target in shared:
        if src not in given:
            continue  # the integration's default (or one it derived from the model), not the author's choice
        value = getattr(chat, src, None)
        if isinstance(value, int | float) and not isinstance(value, bool) and target not in draft.models:
            draft.models[target] = value
            draft.models["force_shared_settings"] = True
            report.add(
                "changed",
                f"{type(chat).__name__}.{src}={value!r}",
                f"imported as models.{target} with force_shared_settings: true (the agent used it)",
            )


def _tool(t: Any, ref: str, reader: ReaderState) -> DraftTool | None:
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
    pauses = _pauses(fn)
    if pauses is not None:
        reader.report.add(
            "not_portable",
            f"{subject} ({where(fn)})",
            f"not imported: it pauses the graph with LangGraph's interrupt() ({pauses}), which only a "
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
    subs = _graphs_used(fn)
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


def _pauses(fn: Any) -> str | None:
    """Where ``fn`` calls LangGraph's ``interrupt()`` — itself, or a function of its own module it calls
    (two levels down) — read from the names its code uses; None when it does not."""
    import types

    from langgraph import types as lg_types

    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(inspect.unwrap(fn), 0)]
    while todo:
        func, depth = todo.pop()
        code = getattr(func, "__code__", None)
        if code is None or id(func) in seen:
            continue
        seen.add(id(func))
        names: set[str] = set()
        codes = [code]
        while codes:
            c = codes.pop()
            names |= set(c.co_names) | set(c.co_freevars)
            codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
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


_CONNECTION = re.compile(
    r"api_key|api_base|base_url|api_url|endpoint|organization|proxy|timeout|retries|http|headers|"
    r"default_query|client|credentials|project|location|transport|rate_limiter|callbacks|verbose|tags|"
    r"metadata|cache|^name$|stream"
)
"""Chat-model fields about reaching the vendor (or LangChain's own bookkeeping), not about what the agent
asks the model: portagent sets the endpoint and streaming per run."""


def _other_settings(chat: Any, given: set[str], draft: DraftAgent, report: ImportReport) -> None:
    """Every other setting the program gave its chat model is listed, never dropped silently."""
    from portagent.core.secrets import mask_text

    quiet = sorted(f for f in given if _CONNECTION.search(f))
    if quiet:
        report.add(
            "note",
            f"{type(chat).__name__} connection and client settings of agent {draft.name}: {', '.join(quiet)}",
            "not carried over: portagent points each run at its endpoint (and streams with --stream)",
        )
    for f in sorted(given):
        if f in quiet:
            continue
        value = mask_text(repr(getattr(chat, f, None)))
        report.add(
            "not_portable",
            f"{type(chat).__name__}.{f}={value}"[:160],
            "not imported: a model setting the spec has no field for (set it by hand where a provider "
            "supports it, or leave it)",
        )


_DERIVED = frozenset({"profile"})
"""Fields LangChain fills in itself from what it knows of the model (not the program's settings)."""


def _authored(chat: Any, id_field: str) -> set[str]:
    """The chat model's fields the program gave a value of its own. ``model_fields_set`` is not that:
    the integrations fill fields in their validators (langchain-anthropic sets ``max_tokens`` from the
    model's profile, e.g. 128000 for claude-sonnet-4-6; langchain-openai its clients), which then count
    as set. So each set field is compared with a reference model of the same class, built with the same
    model id and connection settings and nothing else: a field the reference also has set, to the same
    value, is the integration's, not the author's. (Without a reference, and for what was copied into it, a field is
    compared with the class default.)"""
    fields = {f for f in getattr(chat, "model_fields_set", ()) if f not in _DERIVED}
    copied = {
        f
        for f in fields
        if f == id_field
        or (_CONNECTION.search(f) and "client" not in f and f not in ("metadata", "callbacks"))
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # what the class warns about, the program's own run warned
            reference = type(chat)(**{f: getattr(chat, f) for f in copied})
    except Exception:  # e.g. a setting the class requires that is not a connection setting
        reference = None
    missing = object()
    out = set()
    for f in fields:
        if reference is None or f in copied:  # what was copied is judged against the class default
            if _set_by_author(chat, f):
                out.add(f)
            continue
        value = getattr(chat, f, None)
        if value is None or (isinstance(value, dict | list | tuple | set | str) and not value):
            continue
        if f not in reference.model_fields_set:  # the class fills nothing in there: the program set it
            out.add(f)
            continue
        try:
            differs = bool(value != getattr(reference, f, missing))
        except Exception:  # a value that cannot be compared: treat it as given
            differs = True
        if differs:
            out.add(f)
    return out


def _set_by_author(chat: Any, field: str) -> bool:
    """Without a reference model: was ``field`` given a value of the program's own (not left empty or at
    its default, not derived from the model's profile)?"""
    value = getattr(chat, field, None)
    if value is None or (isinstance(value, dict | list | tuple | set | str) and not value):
        return False
    profile = getattr(chat, "profile", None)
    if (
        field in ("max_tokens", "max_output_tokens")
        and isinstance(profile, dict)
        and value == profile.get("max_output_tokens")
    ):
        return False  # derived from the model's profile (langchain-anthropic does this)
    info = type(chat).model_fields.get(field)
    if info is None:
        return True
    try:
        default = info.get_default(call_default_factory=True)
    except Exception:  # a factory that needs other fields: treat the value as given
        return True
    return bool(value != default)


def _bound_options(model: Any, imported: set[str], draft: DraftAgent, report: ImportReport) -> None:
    """What ``bind_tools`` was told beside the tools (``tool_choice``, ``parallel_tool_calls``…), and tool
    definitions bound to the model that no ``@tool`` function stands behind (dicts, provider built-ins)."""
    kwargs = getattr(model, "kwargs", None)
    if not isinstance(kwargs, dict):
        return
    for key, value in sorted(kwargs.items()):
        if key == "tools":
            for t in value if isinstance(value, list) else []:
                fn = t.get("function") if isinstance(t, dict) else None
                tname = (fn or {}).get("name") if isinstance(fn, dict) else None
                tname = tname or (t.get("name") if isinstance(t, dict) else None) or "?"
                if tname in imported:
                    continue
                kind = t.get("type", "?") if isinstance(t, dict) else type(t).__name__
                report.add(
                    "not_portable",
                    f"tool definition {tname!r} (type {kind}) bound to the model of agent {draft.name}",
                    "not imported: no function runs it here (a provider built-in, or a schema whose code "
                    "lives elsewhere); write a ToolSpec and a handler for it",
                )
            continue
        report.add(
            "not_portable",
            f"bind_tools {key}={value!r}"[:160],
            "not imported: portagent leaves the choice of tools to the model on every provider",
        )


def _graph_options(
    graph: Any,
    draft: DraftAgent,
    report: ImportReport,
    *,
    tools_node: str = "tools",
    model_node: str = "agent",
) -> None:
    """What the compiled graph was given beside its nodes: a pause before the tool node is LangGraph's
    approval point (every imported tool then needs approval); a checkpointer or store keeps threads and
    memory, which portagent keeps itself."""
    raw_before: Any = getattr(graph, "interrupt_before_nodes", None) or []
    raw_after: Any = getattr(graph, "interrupt_after_nodes", None) or []
    every = [n for n in graph.nodes if n != "__start__"]
    before = every if raw_before == "*" else list(raw_before)
    after = every if raw_after == "*" else list(raw_after)
    if tools_node in before:
        for tool in draft.tools:
            tool.needs_approval = True
            tool.approval_reason = f"the graph paused before its tool node: interrupt_before=[{tools_node!r}]"
        report.add(
            "changed",
            f"interrupt_before=[{tools_node!r}] of agent {draft.name}",
            "imported as requires_approval: true on every tool (the graph paused before running any tool "
            "call); narrow it in policy.yaml",
        )
    for kind, nodes in (
        ("interrupt_before", [n for n in before if n != tools_node]),
        ("interrupt_after", after),
    ):
        if nodes:
            report.add(
                "not_portable",
                f"{kind}={nodes!r} of agent {draft.name}",
                "not imported: portagent pauses a run only for a tool call's approval",
            )
    if getattr(graph, "checkpointer", None) not in (None, False):
        report.add(
            "note",
            f"checkpointer {type(graph.checkpointer).__name__} of agent {draft.name}",
            "not carried over: portagent keeps a session's turns itself (portagent chat, sessions; "
            "docs/sessions.md) and resumes paused runs from its own store",
        )
    if getattr(graph, "store", None) is not None:
        report.add(
            "not_portable",
            f"store {type(graph.store).__name__} of agent {draft.name}",
            "not imported: long-term memory is the spec's memory section (docs/memory.md)",
        )
