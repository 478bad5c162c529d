"""Reading a hand-built LangGraph graph into an ``ImportDraft``: a ``StateGraph`` whose nodes the program
wrote — a model node (a function calling a chat model bound to tools, or a ``prompt | model`` chain), a
``ToolNode``, and the routes between them (``tools_condition``, a routing function, ``Command(goto=...)``).

What is read: the chat model each model node calls (from the names its code uses: module globals and its
closure), its system prompt (a fixed ``SystemMessage`` or a prompt template without variables), the tool
node's tools, an ``interrupt()`` review node before the tools (``requires_approval``). Every other node and
route is listed in the import report with its ``file:line``; a graph with no model node to read is one
message. The prebuilt ReAct agent and what both readers share (model, tools, options) are in
``from_langgraph``.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

from portagent.adapters.base import package_version
from portagent.contracts.errors import UsageError
from portagent.migration.draft import DraftAgent, ImportDraft
from portagent.migration.from_langgraph import (
    EXPECTED,
    _bound_options,
    _graph_name,
    _graph_options,
    _model,
    _node_function,
    _pauses,
    _tool,
)
from portagent.migration.importing import ReaderState, placeholder_instructions, where
from portagent.migration.report import ImportReport


def read_built_graph(ref: str, graph: Any, nodes: list[str]) -> ImportDraft:
    """A graph the program built itself (``StateGraph`` + ``ToolNode`` + ``tools_condition``): the
    tools are the tool node's, the model is the chat model the node that routes to the tool node calls;
    its prompt is read when that node puts a ``SystemMessage`` of a constant text in front of the
    messages. Every other node is code, listed in the report with its ``file:line``."""
    from langgraph.prebuilt import ToolNode

    tool_nodes = [n for n in nodes if isinstance(graph.nodes[n].bound, ToolNode)]
    listing = ", ".join(nodes) or "(none)"
    if len(tool_nodes) != 1:
        raise UsageError(
            f"{ref} is a compiled graph with nodes {listing}; --from langgraph reads {EXPECTED}, or a "
            "StateGraph whose one ToolNode a model node routes to (tools_condition): it has "
            + ("no ToolNode" if not tool_nodes else f"{len(tool_nodes)} ToolNodes ({', '.join(tool_nodes)})")
        )
    tools_node = tool_nodes[0]
    routes = _routes_to(graph, tools_node)
    gates = {}  # nodes on the way to the tool node that pause for a human: LangGraph's approval
    for r in routes:
        f = _node_function(graph.nodes[r].bound)
        paused = _pauses(f) if f is not None and not _chat_models_used(f) else None
        if paused is not None:
            gates[r] = paused
    if gates:
        routes = sorted(
            (set(routes) - set(gates)) | {n for g in gates for n in _routes_to(graph, g) if n != tools_node}
        )
    if len(routes) != 1:
        raise UsageError(
            f"{ref} is a compiled graph with nodes {listing}: "
            + (
                f"no node routes to its ToolNode {tools_node!r}"
                if not routes
                else f"{len(routes)} nodes ({', '.join(routes)}) route to its ToolNode {tools_node!r}"
            )
            + f"; --from langgraph reads {EXPECTED}, or a StateGraph with one model node and one ToolNode"
        )
    model_node = routes[0]
    func = _node_function(graph.nodes[model_node].bound)
    models = _chat_models_used(func)
    if len(models) != 1:
        at = where(func) if func is not None else f"node {model_node!r}"
        raise UsageError(
            f"{ref}: the model of node {model_node!r} ({at}) cannot be read: "
            + (
                "its function names no chat model (it is built or chosen at run time)"
                if not models
                else f"its function names {len(models)} chat models ({', '.join(n for n, _ in models)})"
            )
            + "; give the node a chat model made at the module's top level"
        )
    report = ImportReport(sdk=f"langgraph {package_version('langgraph')}", source=ref)
    reader = ReaderState(report)
    name = _graph_name(ref, graph, reader)
    report.add(
        "note",
        f"agent {name}",
        f"read from a graph the program built: model node {model_node!r} ({where(func)}), tool node "
        f"{tools_node!r}",
    )
    draft = DraftAgent(name=name, instructions=_node_prompt(func, model_node, name, report))
    static_model = models[0][1]
    _model(static_model, draft, report)
    node_tools = getattr(graph.nodes[tools_node].bound, "tools_by_name", {})
    for t in node_tools.values():
        tool = _tool(t, ref, reader)
        if tool is not None:
            draft.tools.append(tool)
    _bound_options(static_model, set(node_tools), draft, report)
    for gate, paused in gates.items():
        for tool in draft.tools:
            tool.needs_approval = True
            tool.approval_reason = f"the graph paused for a human in node {gate!r} before its tool node"
        report.add(
            "changed",
            f"node {gate!r} of agent {name} ({paused})",
            "imported as requires_approval: true on every tool: it pauses with interrupt() between the "
            "model's tool calls and the tool node (what it asks and how it reads the answer — edits, "
            "feedback to the model — is the program's own; portagent approves or rejects each call)",
        )
    for other in nodes:
        if other in (model_node, tools_node) or other in gates:
            continue
        f = _node_function(graph.nodes[other].bound)
        report.add(
            "not_portable",
            f"node {other!r} of agent {name} ({where(f) if f is not None else type(graph.nodes[other].bound).__name__})",
            "not imported: a node of the program's own code, which no spec can stand for; the agent was "
            "imported without it",
        )
    for spec in getattr(getattr(graph, "builder", None), "branches", {}).get(model_node, {}).values():
        route = getattr(getattr(spec, "path", None), "func", None)
        if route is not None and getattr(route, "__name__", "") != "tools_condition":
            report.add(
                "review",
                f"routing from node {model_node!r} ({getattr(route, '__qualname__', '?')}, {where(route)})",
                "read as tools_condition: run the tools when the model asks for them, else answer; any "
                "other rule of the program's (a limit, a check) is not in the spec",
            )
    _graph_options(graph, draft, report, tools_node=tools_node, model_node=model_node)
    return reader.draft("langgraph", draft)


def _routes_to(graph: Any, target: str) -> list[str]:
    """The nodes with an edge or a conditional branch that can lead to ``target``."""
    builder = getattr(graph, "builder", None)
    found: set[str] = set()
    for src, dst in getattr(builder, "edges", set()):
        if dst == target and src != "__start__":
            found.add(src)
    for src, branches in getattr(builder, "branches", {}).items():
        for spec in branches.values():
            ends = getattr(spec, "ends", None) or {}
            if target in ends.values() or (not ends and target in graph.nodes):
                found.add(src)
    for src, node in getattr(builder, "nodes", {}).items():  # Command(goto=...) destinations
        if target in (getattr(node, "ends", None) or ()):
            found.add(src)
    return sorted(found - {target})


def _code_and_scope(func: Any) -> tuple[Any, dict[str, Any]] | None:
    """A node function's code and the names it can see (its module's globals, then its closure), or
    None for a callable without Python code."""
    if func is None:
        return None
    target = inspect.unwrap(func)
    code = getattr(target, "__code__", None)
    if code is None:
        return None
    scope = dict(getattr(target, "__globals__", {}))
    with contextlib.suppress(TypeError, ValueError):
        scope.update(inspect.getclosurevars(target).nonlocals)
    return code, scope


def _chat_models_used(func: Any) -> list[tuple[str, Any]]:
    """(name, model) for each chat model (or chat model bound to tools) the node function names, one
    per distinct chat model."""
    from langchain_core.language_models import BaseChatModel

    read = _code_and_scope(func)
    if read is None:
        return []
    code, scope = read
    names: set[str] = set()
    codes = [code]
    while codes:
        c = codes.pop()
        names |= set(c.co_names) | set(c.co_freevars)
        codes += [k for k in c.co_consts if hasattr(k, "co_names")]
    found: dict[int, tuple[str, Any]] = {}
    candidates = [(n, v) for n in names for v in _steps(scope.get(n))]
    for n, value in sorted(candidates, key=lambda c: not hasattr(c[1], "bound")):  # bound models first
        chat = getattr(value, "bound", value)
        if isinstance(chat, BaseChatModel) and id(chat) not in found:
            found[id(chat)] = (n, value)
    return list(found.values())


def _steps(value: Any) -> list[Any]:
    """A runnable the node names, and, for a chain (``prompt | model``), each of its steps."""
    from langchain_core.runnables import RunnableSequence

    if isinstance(value, RunnableSequence):
        return [value, *value.steps]
    return [value]


def _chain_prompts(func: Any) -> list[Any]:
    """The ``ChatPromptTemplate`` steps of the chains (``prompt | model``) a node function names."""
    from langchain_core.prompts import ChatPromptTemplate

    read = _code_and_scope(func)
    if read is None:
        return []
    code, scope = read
    out: list[Any] = []
    for n in sorted(set(code.co_names) | set(code.co_freevars)):
        steps = _steps(scope.get(n))
        if len(steps) > 1:
            out.extend(s for s in steps if isinstance(s, ChatPromptTemplate))
    return out


def _template_system_text(template: Any) -> str | None:
    """The system text of a ``ChatPromptTemplate`` when it is a fixed text (no variables), else None."""
    from langchain_core.messages import SystemMessage
    from langchain_core.prompts import SystemMessagePromptTemplate

    texts: list[str] = []
    for m in getattr(template, "messages", []):
        if isinstance(m, SystemMessage) and isinstance(m.content, str):
            texts.append(m.content)
        elif isinstance(m, SystemMessagePromptTemplate):
            inner = getattr(m, "prompt", None)
            text = getattr(inner, "template", None)
            if getattr(inner, "input_variables", None) or not isinstance(text, str):
                return None
            texts.append(text)
    return "\n\n".join(texts) if len(texts) == 1 else None


def _node_prompt(func: Any, node: str, name: str, report: ImportReport) -> str:
    """The system prompt a model node puts in front of the messages: ``SystemMessage(TEXT)`` /
    ``SystemMessage(content=TEXT)`` / ``{"role": "system", "content": TEXT}`` / ``("system", TEXT)`` with
    TEXT a constant or a module-level string; else a placeholder, reported with the node's ``file:line``."""
    import ast
    import sys
    import textwrap

    from portagent.migration.static_read import Reader, Unreadable

    module = sys.modules.get(getattr(func, "__module__", "") or "")
    texts: list[str] = []
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (TypeError, OSError, SyntaxError):
        tree = None
    if tree is not None and module is not None:
        reader = Reader(module, source, where(func).rpartition(":")[0], ast.parse(""))
        for n in ast.walk(tree):
            expr: ast.AST | None = None
            if (
                isinstance(n, ast.Call)
                and getattr(n.func, "id", getattr(n.func, "attr", "")) == "SystemMessage"
            ):
                expr = (
                    n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "content"), None)
                )
            elif isinstance(n, ast.Tuple) and len(n.elts) == 2 and isinstance(n.elts[0], ast.Constant):
                expr = n.elts[1] if n.elts[0].value == "system" else None
            elif isinstance(n, ast.Dict):
                pairs = {
                    k.value: v for k, v in zip(n.keys, n.values, strict=True) if isinstance(k, ast.Constant)
                }
                role = pairs.get("role")
                if isinstance(role, ast.Constant) and role.value == "system":
                    expr = pairs.get("content")
            if expr is None:
                continue
            try:
                value = reader.value(expr, None)
            except Unreadable:
                value = None
            texts.append(value if isinstance(value, str) else "")
    if len(texts) == 1 and texts[0].strip():
        report.add(
            "changed",
            f"system prompt of agent {name}",
            f"read from the system message node {node!r} puts in front of the messages ({where(func)})",
        )
        return texts[0]
    templates = _chain_prompts(func) if not texts else []
    if len(templates) == 1:
        text = _template_system_text(templates[0])
        if text and text.strip():
            report.add(
                "changed",
                f"system prompt of agent {name}",
                f"read from the ChatPromptTemplate node {node!r} runs before its model ({where(func)}); the "
                "template's other messages (the conversation placeholder) are the run's own",
            )
            return text
        texts = [""]  # a template with variables: computed at run time
    report.add(
        "not_portable",
        f"prompt of agent {name} (node {node!r}, {where(func)})",
        "not read: "
        + (
            "the node builds no system message the import can read (a constant text)"
            if not texts
            else "the node builds its system message at run time, or more than one"
        )
        + "; a placeholder was written for instructions",
    )
    return placeholder_instructions(name, "the LangGraph node's prompt could not be read")
