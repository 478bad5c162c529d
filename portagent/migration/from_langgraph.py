"""Reading a LangGraph prebuilt ReAct agent (langgraph 1.2, langgraph-prebuilt 1.1) into an ``ImportDraft``.

A compiled LangGraph graph is nodes of arbitrary code; what is read exactly is the graph whose nodes
LangGraph itself wrote: ``langgraph.prebuilt.create_react_agent(model, tools, prompt=...)`` — nodes
``agent`` (the chat model bound to the tools, behind the prompt) and ``tools`` (a ``ToolNode``). A
hand-built ``StateGraph`` (a model node, a ``ToolNode``, their routes) is read by ``from_langgraph_graph``
with what it cannot read reported; the prebuilt agent's pre/post-model hooks are refused with one message.
This module finds the graph in a program and reads the prebuilt agent and the graph's options (pauses,
checkpointer, store, state fields); the chat model is read by ``from_langgraph_model``, the tools by
``from_langgraph_tools``, a node's or a ``prompt=`` function's code by ``from_langgraph_node``.

| LangGraph | portagent |
|---|---|
| graph ``name`` (when set) | agent ``name`` |
| ``prompt`` (a string, a ``SystemMessage``, a ``ChatPromptTemplate`` without variables, a function putting a fixed system message first) | ``instructions`` |
| ``model``: ``ChatOpenAI`` / ``ChatAnthropic`` / ``ChatGoogleGenerativeAI`` | ``models.langgraph: vendor:id`` and that vendor's provider id (``models.openai`` / ``anthropic`` / ``adk``) |
| its ``temperature`` / ``max_tokens`` when the program set them (``_authored``) | shared settings, forced |
| ``@tool`` functions (``StructuredTool``) | ToolSpecs: the schema the model is sent, handler ``module:name.func`` (``.coroutine`` when async) |

One internal is read, here only: ``create_react_agent`` keeps its model and prompt in the closure of the
``agent`` node's function (``static_model``, and the prompt's ``_system_message``); they are read with
``inspect.getclosurevars``. If that shape changes, the import refuses with one message instead of guessing
(tests/migration/test_import_new_runtimes.py pins it).
"""

from __future__ import annotations

import inspect
from typing import Any

from portagent.adapters.base import package_version
from portagent.contracts.errors import UsageError
from portagent.migration.draft import DraftAgent, ImportDraft
from portagent.migration.from_langgraph_model import bound_options, read_model
from portagent.migration.from_langgraph_tools import graphs_used, read_tool
from portagent.migration.importing import (
    ReaderState,
    a_type,
    other_sdk_hint,
    placeholder_instructions,
    schema_gap,
    where,
)
from portagent.migration.report import ImportReport

EXPECTED = (
    "a compiled graph made by langgraph.prebuilt.create_react_agent(model, tools, prompt=...) with nodes "
    "'agent' and 'tools' (docs/migration.md)"
)
_PREBUILT_EXTRA_NODES = frozenset({"generate_structured_response", "pre_model_hook", "post_model_hook"})
"""Nodes ``create_react_agent`` itself adds for ``response_format`` and the model hooks."""


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
    read_model(static_model, draft, report)
    node_tools = getattr(obj.nodes["tools"].bound, "tools_by_name", {}) if "tools" in obj.nodes else {}
    for t in node_tools.values():
        tool = read_tool(t, ref, reader)
        if tool is not None:
            draft.tools.append(tool)
    bound_options(static_model, set(node_tools), draft, report)
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
            out.extend(g for _, g in graphs_used(fn))
    return out


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
    from langchain_core.prompts import ChatPromptTemplate

    from portagent.migration.from_langgraph_node import callable_code, node_prompt, template_system_text

    if isinstance(prompt, ChatPromptTemplate):  # prompt=ChatPromptTemplate(...): a runnable of its own
        text = template_system_text(prompt)
        if text and text.strip():
            report.add(
                "changed",
                f"system prompt of agent {name}",
                "read from the ChatPromptTemplate given as prompt=; its other messages (the conversation "
                "placeholder) are the run's own",
            )
            return text
    elif func is not None:  # prompt=a function: its code is read as a model node's is
        code = callable_code(func)
        return node_prompt(code, f"the prompt= function {code.label}", name, report, title=code.label)
    report.add(
        "not_portable",
        f"prompt of agent {name} ({type(prompt).__qualname__}, a runnable)",
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
    fields = _state_fields(graph)
    if fields:
        schema = getattr(getattr(graph, "builder", None), "state_schema", None)
        report.add(
            "not_portable",
            f"state fields {', '.join(fields)} of agent {draft.name} "
            f"({getattr(schema, '__qualname__', '?')}, {where(schema)})",
            "not imported: a portable run's state is its conversation; what the program keeps in these "
            "fields (read or written by its nodes, its prompt or InjectedState tools) has no place in the "
            "spec — a tool can keep values in ToolContext.state (docs/migration.md)",
        )


_STATE_OF_THE_LOOP = frozenset({"messages", "remaining_steps", "is_last_step", "structured_response"})
"""The state fields of LangGraph's own agent loop (``MessagesState``, ``AgentState``)."""


def _state_fields(graph: Any) -> list[str]:
    """The fields of the graph's state beside the agent loop's own (a ``MessagesState`` / ``AgentState``
    subclass adding ``summary``, ``user_name``…)."""
    import typing

    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    if not isinstance(schema, type):
        return []
    try:
        hints = typing.get_type_hints(schema)
    except Exception:  # an annotation naming what the module does not define: read the names only
        hints = {k: None for c in reversed(schema.__mro__) for k in getattr(c, "__annotations__", {})}
    return sorted(k for k in hints if k not in _STATE_OF_THE_LOOP and not k.startswith("_"))
