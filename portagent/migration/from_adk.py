"""Reading a google-adk ``LlmAgent`` (2.13) into an ``ImportDraft``.

| google-adk | portagent |
|---|---|
| ``name``, ``description``, ``instruction`` (a string) | AgentSpec ``name``, ``description``, ``instructions`` |
| ``model`` (a string or a ``Gemini``) | ``models.adk`` |
| ``generate_content_config.temperature`` / ``max_output_tokens`` | shared settings, forced |
| a function, or ``FunctionTool(func)`` | ToolSpec: the SDK's own declaration (``parameters_json_schema``), handler ``.func`` (a shim through ``FunctionTool.run_async`` when ADK converts the arguments) |
| ``FunctionTool(require_confirmation=True)`` | ``requires_approval: true`` + a policy rule |
| ``AgentTool(agent)`` | delegation ``agent_as_tool`` |
| ``sub_agents=[LlmAgent]`` | delegation ``handoff`` (ADK's ``transfer_to_agent``) |
| ``output_schema`` (a pydantic model or a dict) | ``output_schema`` |

Callbacks (agent, model, tool) are noted in the report, not imported: the gateway and the policy
replace ``before_tool_callback``'s usual job on every provider. Built-in tools (Google Search, code
execution …), toolsets, workflow agents (Sequential/Parallel/Loop), planners, ``output_key`` and
state templating in instructions are listed too. One SDK internal is read, here only:
``FunctionTool._require_confirmation`` and ``_context_param_name`` (ADK has no public accessor).
"""

from __future__ import annotations

import re
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool

from portagent.adapters.base import package_version
from portagent.migration.draft import DraftAgent, DraftEdge, DraftTool, ImportDraft, PolicyRuleDraft
from portagent.migration.importing import (
    TC_PARAM,
    UNIMPORTABLE,
    ReaderState,
    function_ref,
    holder_ref,
    placeholder_instructions,
    refuse_schema_gap,
    schema_gap,
    sdk_context_uses,
    shim_function,
    source_alias,
    takes_param,
    where,
    wrong_type,
)
from portagent.migration.report import ImportReport
from portagent.migration.shims import passes_json_through

CALLBACKS = (
    "before_agent_callback",
    "after_agent_callback",
    "before_model_callback",
    "after_model_callback",
    "on_model_error_callback",
    "before_tool_callback",
    "after_tool_callback",
    "on_tool_error_callback",
)
ADK_UNPORTABLE = (
    "actions",
    "save_artifact",
    "load_artifact",
    "list_artifacts",
    "search_memory",
    "request_credential",
    "get_auth_response",
    "request_confirmation",
    "_invocation_context",
)
"""Members of ADK's ToolContext with no portable equivalent (reported where a tool uses them)."""
_SHARED = {"temperature": "temperature", "max_output_tokens": "max_tokens"}
_STATE_TEMPLATE = re.compile(r"\{[A-Za-z_][\w:.]*\??\}")


def read_adk(ref: str, obj: Any) -> ImportDraft:
    if not isinstance(obj, LlmAgent):
        raise wrong_type(ref, obj, "a google-adk LlmAgent", "adk")
    report = ImportReport(sdk=f"google-adk {package_version('google-adk')}", source=ref)
    reader = _Reader(report, ref.partition(":")[0])
    root = reader.agent(obj)
    return reader.draft("adk", root)


class _Reader(ReaderState):
    def __init__(self, report: ImportReport, source: str = "") -> None:
        super().__init__(report)
        self.source = source

    def agent(self, a: LlmAgent) -> DraftAgent:
        found = self.agents.get(id(a))
        if found is not None:
            return found
        name = self.agent_names.take(a.name)
        draft = DraftAgent(name=name, instructions="", description=a.description or "")
        self.agents[id(a)] = draft
        draft.instructions = self.instructions(a, name)
        self.model(a, draft)
        for t in a.tools:
            self.tool_or_edge(t, draft)
        for sub in a.sub_agents:
            if isinstance(sub, LlmAgent):
                draft.edges.append(DraftEdge("handoff", self.agent(sub), sub.description or ""))
            else:
                self.report.add(
                    "not_portable",
                    f"sub-agent {getattr(sub, 'name', '?')} ({type(sub).__name__}) of {name}",
                    "not imported: workflow agents (Sequential, Parallel, Loop …) have no "
                    "portable equivalent; only LlmAgent sub-agents become handoffs",
                )
        self.output(a, draft)
        for cb in CALLBACKS:
            value = getattr(a, cb, None)
            if value:
                self.report.add(
                    "not_portable",
                    f"{cb} {_label(value)} on agent {name} ({_where_all(value)})",
                    "noted, not imported: portagent's gateway and policy decide every tool call "
                    "(what before_tool_callback usually does) and its trace records model calls; "
                    "port other logic into tool handlers or preconditions",
                )
        for field, why in (
            ("output_key", "the final output is returned, not written to session state"),
            ("input_schema", "portable agents take text input"),
            ("planner", "no portable planner"),
            ("code_executor", "no portable code execution"),
        ):
            if getattr(a, field, None):
                self.report.add("not_portable", f"{field} on agent {name}", f"not imported: {why}")
        if a.include_contents != "default":
            self.report.add(
                "not_portable",
                f"include_contents={a.include_contents!r} on agent {name}",
                "not imported: agents see their conversation",
            )
        if a.disallow_transfer_to_parent or a.disallow_transfer_to_peers:
            self.report.add(
                "note",
                f"transfer restrictions on agent {name}",
                "portagent's ADK adapter allows transfers only down the delegation edges anyway",
            )
        if a.global_instruction:
            self.report.add(
                "not_portable",
                f"global_instruction on agent {name}",
                "not imported: copy it into the instructions of the agents that need it",
            )
        if getattr(a, "static_instruction", None):
            self.report.add(
                "not_portable",
                f"static_instruction on agent {name}",
                "not imported: copy it into instructions",
            )
        return draft

    def instructions(self, a: LlmAgent, name: str) -> str:
        ins = a.instruction
        if isinstance(ins, str) and ins.strip():
            if _STATE_TEMPLATE.search(ins):
                self.report.add(
                    "not_portable",
                    f"state templates in the instruction of {name}",
                    "kept as text: ADK fills {placeholders} from session state, other providers do not; "
                    "rewrite them",
                )
            return ins
        if callable(ins):
            self.report.add(
                "not_portable",
                f"instruction provider {_label(ins)} on agent {name} ({where(ins)})",
                "not imported: instructions computed at run time; a placeholder marked [instructions to write] was written",
            )
            return placeholder_instructions(
                name, f"the ADK agent computed its instruction with {_label(ins)}"
            )
        self.report.add(
            "changed",
            f"agent {name} has no instruction",
            "a placeholder marked [instructions to write] was written",
        )
        return placeholder_instructions(name, "the ADK agent had no instruction")

    def model(self, a: LlmAgent, draft: DraftAgent) -> None:
        m = a.model
        if isinstance(m, str):
            if m:
                draft.models["adk"] = m
            else:
                self.report.add(
                    "note",
                    f"agent {draft.name} sets no model",
                    "it inherits the root agent's model ids, as in ADK",
                )
        elif hasattr(m, "model") and type(m).__name__ == "Gemini":
            draft.models["adk"] = str(m.model)
        else:
            self.report.add(
                "not_portable",
                f"model object {type(m).__name__} on agent {draft.name}",
                "not imported: only Gemini models map to models.adk; set the model ids yourself",
            )
        config = a.generate_content_config
        if config is None:
            return
        for field, target in _SHARED.items():
            value = getattr(config, field, None)
            if value is not None:
                draft.models[target] = value
                draft.models["force_shared_settings"] = True
                self.report.add(
                    "changed",
                    f"generate_content_config.{field} of agent {draft.name}",
                    f"imported as models.{target} with force_shared_settings: true",
                )
        for field, value in sorted(config.model_dump(exclude_none=True).items()):
            if field not in _SHARED:
                self.report.add(
                    "not_portable",
                    f"generate_content_config.{field} on agent {draft.name}",
                    f"not imported: a Gemini-only setting ({value!r})",
                )

    def tool_or_edge(self, t: Any, draft: DraftAgent) -> None:
        if isinstance(t, AgentTool):
            sub_agent = t.agent
            if isinstance(sub_agent, LlmAgent):
                sub = self.agent(sub_agent)
                draft.edges.append(DraftEdge("agent_as_tool", sub, sub_agent.description or ""))
                self.report.add(
                    "changed",
                    f"AgentTool {t.name} on agent {draft.name}",
                    'delegation kind agent_as_tool; portagent\'s agent tools take {"input": string} on '
                    'every provider (ADK\'s AgentTool declared "request")',
                )
            else:
                self.report.add(
                    "not_portable",
                    f"AgentTool {t.name} on agent {draft.name}",
                    f"not imported: it wraps a {type(sub_agent).__name__}, not an LlmAgent",
                )
            return
        if isinstance(t, FunctionTool):
            tool = self.function_tool(t, draft.name)
        elif callable(t) and not isinstance(t, BaseTool | BaseAgent):
            tool = self.function_tool(FunctionTool(t), draft.name, key=t)
        elif isinstance(t, BaseTool) and not type(t).__module__.startswith("google."):
            tool = self.base_tool(t, draft.name)
        else:
            kind = "toolset" if type(t).__name__.endswith("Toolset") else "built-in tool"
            hint = (
                "declare the MCP server under mcp_servers (portagent's gateway then governs its tools)"
                if "Mcp" in type(t).__name__
                else "write a ToolSpec with a handler that does the same"
            )
            self.report.add(
                "not_portable",
                f"{kind} {type(t).__name__} ({getattr(t, 'name', '?')}) on agent {draft.name}",
                f"not imported: no portable equivalent; {hint}",
            )
            return
        if tool is not None and tool not in draft.tools:
            draft.tools.append(tool)

    def function_tool(self, t: FunctionTool, agent: str, key: Any = None) -> DraftTool | None:
        ident = id(key if key is not None else t.func)
        if ident in self.tools:
            return self.tools[ident]
        self.tools[ident] = None
        subject = f"function tool {t.name!r} on agent {agent}"
        schema = _declared_schema(t)
        gap = schema_gap(schema) if schema is not None else "ADK gives no declaration for it"
        if gap:
            refuse_schema_gap(self.report, subject, gap)
            return None
        assert schema is not None
        ref = function_ref(t.func)
        if ref is None:
            self.report.add(
                "not_portable",
                subject,
                UNIMPORTABLE,
            )
            return None
        name = self.tool_names.take(t.name)
        tool = DraftTool(
            name=name,
            description=t.description or "",
            input_schema=schema,
            handler=ref,
            origin=f"google-adk FunctionTool {t.name} ({ref.replace(':', '.')})",
        )
        ctx_param = getattr(t, "_context_param_name", "tool_context")
        takes_ctx = takes_param(t.func, ctx_param)
        reserved = takes_param(t.func, "context") or takes_param(t.func, "input_stream")
        if takes_ctx or reserved or not passes_json_through(t.func, frozenset({ctx_param})):
            # ADK converts the arguments before the call (a dict becomes the pydantic model the parameter
            # names …): a shim calls the function through ADK's own FunctionTool.run_async.
            mod, _, attr = ref.partition(":")
            alias = source_alias(mod)
            self.shim_imports[mod] = f"import {mod} as {alias}"
            converts = "gets its arguments converted as ADK's FunctionTool converts them"
            if takes_ctx:
                why = (
                    f"takes ADK's {ctx_param}; it gets one whose state is portagent's per-session "
                    "ToolContext.state on every provider (agent_name, function_call_id, invocation_id "
                    f"too; nothing else), and {converts}"
                )
                head, context = f"{TC_PARAM}: ToolContext, **args", f", adk_context({TC_PARAM})"
            else:
                why = (
                    f"has a parameter portagent's calling convention reserves; it {converts}"
                    if reserved
                    else f"{converts} (pydantic models, lists of them …)"
                )
                head, context = "**args", ""
            tool.shim = (
                f"async def {shim_function(name)}({head}):\n"
                f'    """{mod}.{attr} {why}."""\n'
                "    from portagent.migration.shims import call_adk_tool\n\n"
                f"    return await call_adk_tool({alias}.{attr}, args{context})\n"
            )
            self.report.add(
                "review" if takes_ctx else "note",
                subject,
                f"handler is a shim ({shim_function(name)}) calling {ref}: it {why}",
            )
            for line, what in sdk_context_uses(t.func, ctx_param if takes_ctx else None, ADK_UNPORTABLE):
                self.report.add(
                    "not_portable",
                    f"{what} in {subject} ({line})",
                    "no portable equivalent: the call raises AttributeError there; rewrite that part",
                )
        confirm = getattr(t, "_require_confirmation", False)
        if confirm is True:
            tool.needs_approval = True
            tool.approval_reason = "require_confirmation=True in the ADK definition"
            self.rules.append(
                PolicyRuleDraft(f"imported-approval-{name}", "approval_required", tool.approval_reason, name)
            )
        elif callable(confirm):
            self.report.add(
                "not_portable",
                f"require_confirmation={_label(confirm)} on {subject}",
                "not imported: a per-call confirmation function; the tool keeps the conservative "
                "default (approval required) — express the condition as a policy rule",
            )
        if getattr(t, "is_long_running", False):
            self.report.add(
                "not_portable",
                f"long-running {subject}",
                "imported as an ordinary tool: portagent waits for the handler (use budgets.timeout_ms)",
            )
        self.tools[ident] = tool
        return tool

    def base_tool(self, t: BaseTool, agent: str) -> DraftTool | None:
        """A user-written ``BaseTool`` subclass: its own declaration, and a shim calling its ``run_async``
        (there is no plain function behind it)."""
        if id(t) in self.tools:
            return self.tools[id(t)]
        self.tools[id(t)] = None
        subject = f"BaseTool {type(t).__name__} {t.name!r} on agent {agent}"
        decl = t._get_declaration()
        schema: dict[str, Any] | None = None
        if decl is not None:
            schema = (
                dict(decl.parameters_json_schema)
                if decl.parameters_json_schema is not None
                else decl.parameters.json_schema.model_dump(mode="json", exclude_none=True, by_alias=True)
                if decl.parameters is not None
                else {"type": "object", "properties": {}}
            )
        gap = schema_gap(schema) if schema is not None else "it declares nothing to the model"
        holder = holder_ref(t, [type(t).__module__, self.source])
        if gap or holder is None:
            why = gap or "the tool object is not a module-level attribute, so nothing can import it"
            self.report.add(
                "not_portable", subject, f"not imported: {why}; write its ToolSpec and handler by hand"
            )
            return None
        assert schema is not None
        mod, _, attr = holder.partition(":")
        alias = source_alias(mod)
        self.shim_imports[mod] = f"import {mod} as {alias}"
        name = self.tool_names.take(t.name)
        tool = DraftTool(
            name=name,
            description=t.description or "",
            input_schema=schema,
            handler="",
            origin=f"google-adk {type(t).__name__} {t.name} ({mod}.{attr})",
            shim=(
                f"async def {shim_function(name)}({TC_PARAM}: ToolContext, **args):\n"
                f'    """{mod}.{attr} is an ADK BaseTool: its run_async gets the arguments and a '
                'tool_context over portagent\'s ToolContext (state, ids)."""\n'
                f"    return await call_original(\n"
                f"        {alias}.{attr}.run_async, args=args, tool_context=adk_context({TC_PARAM})\n"
                f"    )\n"
            ),
        )
        self.report.add(
            "review",
            subject,
            f"handler is a shim ({shim_function(name)}) calling {mod}.{attr}.run_async "
            "with a tool_context over portagent's ToolContext (state, agent_name, function_call_id, "
            "invocation_id only): check it needs nothing else",
        )
        self.tools[id(t)] = tool
        return tool

    def output(self, a: LlmAgent, draft: DraftAgent) -> None:
        schema = a.output_schema
        if schema is None:
            return
        if isinstance(schema, dict):
            draft.output_schema = dict(schema)
        elif hasattr(schema, "model_json_schema"):
            draft.output_schema = schema.model_json_schema()
            self.report.add(
                "note",
                f"output_schema {_label(schema)} on agent {draft.name}",
                "imported as its JSON Schema; outputs are dicts, not instances of the class",
            )
        else:
            self.report.add(
                "not_portable",
                f"output_schema {_label(schema)} on agent {draft.name}",
                "not imported: not a pydantic model or a JSON Schema",
            )


def _declared_schema(t: FunctionTool) -> dict[str, Any] | None:
    """The parameters ADK declares to Gemini for this tool (JSON Schema form)."""
    decl = t._get_declaration()
    if decl is None:
        return None
    if decl.parameters_json_schema is not None:
        return dict(decl.parameters_json_schema)
    if decl.parameters is not None:
        converted: dict[str, Any] = decl.parameters.json_schema.model_dump(
            mode="json", exclude_none=True, by_alias=True
        )
        return converted
    return {"type": "object", "properties": {}}


def _where_all(value: Any) -> str:
    """``file:line`` of a callback, or of each in a list of callbacks."""
    items = value if isinstance(value, list | tuple) else [value]
    return ", ".join(where(v) for v in items)


def _label(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
