"""Reading a hand-built LangGraph graph into an ``ImportDraft``: a ``StateGraph`` whose nodes the program
wrote — a model node (a function calling a chat model bound to tools, or a ``prompt | model`` chain), a
``ToolNode``, and the routes between them (``tools_condition``, a routing function, ``Command(goto=...)``).

What is read: the chat model each model node calls (from the names its code uses: module globals, its
closure, and for a node that is an object or a bound method, the object's attributes; ``from_langgraph_node``),
its system prompt (a fixed ``SystemMessage`` or a prompt template without variables), the tool
node's tools, an ``interrupt()`` review node before the tools (``requires_approval``). Every other node and
route is listed in the import report with its ``file:line``; a graph with no model node to read is one
message. The prebuilt ReAct agent and the graph's options are in ``from_langgraph``; what both readers share
is in ``from_langgraph_model`` (the chat model) and ``from_langgraph_tools`` (the tool node's tools).
"""

from __future__ import annotations

from typing import Any

from portagent.adapters.base import package_version
from portagent.contracts.errors import UsageError
from portagent.migration.draft import DraftAgent, ImportDraft
from portagent.migration.from_langgraph import EXPECTED, _graph_name, _graph_options
from portagent.migration.from_langgraph_model import bound_options, read_model
from portagent.migration.from_langgraph_node import chat_models_used, node_code, node_prompt
from portagent.migration.from_langgraph_tools import pauses, read_tool
from portagent.migration.importing import ReaderState, where
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
        code = node_code(graph.nodes[r].bound)
        paused = (
            pauses(code.func)
            if code is not None and code.func is not None and not chat_models_used(code)
            else None
        )
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
    code = node_code(graph.nodes[model_node].bound)
    models = chat_models_used(code)
    if code is None or len(models) != 1:
        at = code.where() if code is not None else f"node {model_node!r}"
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
        f"read from a graph the program built: model node {model_node!r} ({code.label}, {code.where()}), tool node "
        f"{tools_node!r}",
    )
    draft = DraftAgent(name=name, instructions=node_prompt(code, f"node {model_node!r}", name, report))
    static_model = models[0][1]
    read_model(static_model, draft, report)
    node_tools = getattr(graph.nodes[tools_node].bound, "tools_by_name", {})
    for t in node_tools.values():
        tool = read_tool(t, ref, reader)
        if tool is not None:
            draft.tools.append(tool)
    bound_options(static_model, set(node_tools), draft, report)
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
        other_code = node_code(graph.nodes[other].bound)
        at = other_code.where() if other_code is not None else type(graph.nodes[other].bound).__name__
        report.add(
            "not_portable",
            f"node {other!r} of agent {name} ({at})",
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
