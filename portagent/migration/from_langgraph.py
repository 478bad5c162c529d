"""Reading a LangGraph prebuilt ReAct agent (langgraph 1.2, langgraph-prebuilt 1.1) into an ``ImportDraft``.

A compiled LangGraph graph is nodes of arbitrary code; what can be read faithfully is the one graph whose
nodes LangGraph itself wrote: ``langgraph.prebuilt.create_react_agent(model, tools, prompt=...)`` — nodes
``agent`` (the chat model bound to the tools, behind the prompt) and ``tools`` (a ``ToolNode``). Any
other graph (hand-written nodes, pre/post-model hooks, a structured-response node, a dynamic model) is
refused with one message naming the nodes found.

| LangGraph | portagent |
|---|---|
| graph ``name`` (when set) | agent ``name`` |
| ``prompt`` (a string or a ``SystemMessage``) | ``instructions`` |
| ``model``: ``ChatOpenAI`` / ``ChatAnthropic`` / ``ChatGoogleGenerativeAI`` | ``models.langgraph: vendor:id`` and that vendor's provider id (``models.openai`` / ``anthropic`` / ``adk``) |
| its ``temperature`` / ``max_tokens`` when set | shared settings, forced |
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
from portagent.migration.draft import DraftAgent, DraftTool, ImportDraft
from portagent.migration.importing import (
    ReaderState,
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
_VENDORS = {
    "ChatOpenAI": ("openai", "openai", "model_name"),
    "AzureChatOpenAI": ("openai", "openai", "model_name"),
    "ChatAnthropic": ("anthropic", "anthropic", "model"),
    "ChatGoogleGenerativeAI": ("google_genai", "adk", "model"),
}
"""Chat model class → (models.langgraph vendor, the portagent provider of that wire, model id field)."""


def read_langgraph(ref: str, obj: Any) -> ImportDraft:
    from langgraph.graph.state import CompiledStateGraph

    if not isinstance(obj, CompiledStateGraph):
        raise UsageError(
            f"{ref} is a {type(obj).__module__}.{type(obj).__qualname__}; --from langgraph reads {EXPECTED}"
        )
    nodes = sorted(n for n in obj.nodes if n != "__start__")
    if nodes not in (["agent"], ["agent", "tools"]):
        raise UsageError(
            f"{ref} is a compiled graph with nodes {', '.join(nodes) or '(none)'}; --from langgraph reads "
            f"{EXPECTED}: other nodes are arbitrary code, which no spec can stand for"
        )
    static_model, prompt = _agent_node(ref, obj.nodes["agent"].bound)
    report = ImportReport(sdk=f"langgraph {package_version('langgraph')}", source=ref)
    reader = ReaderState(report)
    raw = obj.name if obj.name and obj.name != "LangGraph" else ref.rpartition(":")[2].split(".")[-1]
    name = reader.agent_names.take(raw)
    draft = DraftAgent(name=name, instructions=_instructions(prompt, name, report))
    _model(static_model, draft, report)
    if "tools" in obj.nodes:
        node = obj.nodes["tools"].bound
        for t in getattr(node, "tools_by_name", {}).values():
            tool = _tool(t, ref, reader)
            if tool is not None:
                draft.tools.append(tool)
    return ImportDraft(
        sdk="langgraph",
        root=draft,
        report=report,
        rules=reader.rules,
        shim_imports=list(reader.shim_imports.values()),
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
    func = getattr(prompt, "func", None)
    try:
        found = inspect.getclosurevars(func).nonlocals if func is not None else {}
    except TypeError:
        found = {}
    message = found.get("_system_message")
    text = getattr(message, "content", None)
    if isinstance(text, str) and text.strip():
        return text
    if getattr(prompt, "name", "") == "Prompt" and not found:
        report.add(
            "changed",
            f"agent {name} has no prompt",
            "a placeholder marked [instructions to write] was written",
        )
        return placeholder_instructions(name, "the LangGraph agent had no prompt")
    report.add(
        "not_portable",
        f"prompt of agent {name} (a function or runnable)",
        "not imported: a prompt computed at run time; a placeholder was written",
    )
    return placeholder_instructions(name, "the LangGraph agent computed its prompt at run time")


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
    for src, target in shared:
        if src not in chat.model_fields_set:
            continue  # the integration's default, not the author's choice
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


def _injected_params(t: Any) -> list[str]:
    """The tool's parameters the model is never sent (what the graph injects): those of its input schema
    that its tool-call schema leaves out. A ``RunnableConfig`` parameter is in neither (``ainvoke`` fills it)."""
    try:
        every = set(t.get_input_schema().model_fields)
        sent = set(t.tool_call_schema.model_fields)
    except Exception:  # a schema that is not a pydantic model: nothing to compare
        return []
    return sorted(every - sent)
