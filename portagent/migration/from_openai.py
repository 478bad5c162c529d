"""Reading an openai-agents ``Agent`` (0.24) into an ``ImportDraft``.

What maps, and how:

| openai-agents | portagent |
|---|---|
| ``name``, ``handoff_description``, ``instructions`` (a string) | AgentSpec ``name``, ``description``, ``instructions`` |
| ``model`` (a string, or ``OpenAIResponsesModel`` / ``OpenAIChatCompletionsModel``) | ``models.openai`` (+ ``models.openai_api``) |
| ``model_settings.temperature`` / ``max_tokens`` | shared settings, forced (the agent really used them) |
| ``@function_tool`` ``FunctionTool`` | ToolSpec: ``params_json_schema`` as ``input_schema``, handler ``module:name.__wrapped__`` (a shim through the SDK's ``function_schema`` when it converts the arguments) |
| ``needs_approval=True`` | ``requires_approval: true`` + a policy rule |
| ``timeout_seconds`` | ``budgets.timeout_ms`` |
| ``handoffs=[agent or handoff(agent)]`` | delegation ``handoff`` (a ``tool_name_override`` is reported) |
| ``agent.as_tool(...)`` | delegation ``agent_as_tool`` |
| ``output_type`` | ``output_schema`` (the SDK's own ``AgentOutputSchema(...).json_schema()``) |
| ``mcp_servers`` (stdio / streamable HTTP) | ``mcp_servers`` (governed by the gateway, annotations not trusted) |

Everything else (hosted tools, guardrails, hooks, dynamic instructions, ``tool_use_behavior``, callable
``needs_approval`` …) is listed in the report. Two SDK internals are read, here only: the agent behind
an agent-as-tool (``FunctionTool._agent_instance``) and behind a ``Handoff`` (``Handoff._agent_ref``) —
openai-agents exposes no public accessor for either (its own run-state code reads the same fields).
"""

from __future__ import annotations

import inspect
from typing import Any

from agents import Agent, FunctionTool, Handoff
from agents.agent_output import AgentOutputSchema, AgentOutputSchemaBase
from agents.function_schema import function_schema

from portagent.adapters.base import package_version
from portagent.migration.draft import DraftAgent, DraftEdge, DraftTool, ImportDraft, PolicyRuleDraft
from portagent.migration.importing import (
    TC_PARAM,
    UNIMPORTABLE,
    ReaderState,
    function_ref,
    holder_ref,
    placeholder_instructions,
    py_identifier,
    refuse_schema_gap,
    schema_gap,
    sdk_context_uses,
    shim_function,
    source_alias,
    source_module,
    takes_param,
    where,
    wrong_type,
)
from portagent.migration.report import ImportReport
from portagent.migration.shims import passes_json_through

_SHARED_SETTINGS = {"temperature": "temperature", "max_tokens": "max_tokens"}
_IGNORED_SETTINGS = {"include_usage"}  # portagent's adapter sets it itself
_OPENAI_UNPORTABLE = (
    "usage",
    "turn_input",
    "approve_tool",
    "reject_tool",
    "run_config",
    "tool_call",
    "agent",
)


def read_openai(ref: str, obj: Any) -> ImportDraft:
    if not isinstance(obj, Agent):
        raise wrong_type(ref, obj, "an openai-agents Agent", "openai")
    report = ImportReport(sdk=f"openai-agents {package_version('openai-agents')}", source=ref)
    reader = _Reader(ref, report)
    root = reader.agent(obj)
    return reader.draft("openai", root)


class _Reader(ReaderState):
    def __init__(self, ref: str, report: ImportReport) -> None:
        super().__init__(report)
        self.ref = ref

    # --- agents ----------------------------------------------------------------------------------

    def agent(self, a: Agent[Any]) -> DraftAgent:
        found = self.agents.get(id(a))
        if found is not None:
            return found
        name = self.agent_names.take(a.name)
        if name != a.name:
            self.report.add("changed", f"agent {a.name!r}", f"renamed {name!r} (agent names are identifiers)")
        draft = DraftAgent(name=name, instructions="", description=a.handoff_description or "")
        self.agents[id(a)] = draft  # registered before its edges, so handoff cycles resolve
        draft.instructions = self.instructions(a, name)
        self.model(a, draft)
        for t in a.tools:
            self.tool_or_edge(a, t, draft)
        for h in a.handoffs:
            self.handoff(h, draft)
        self.output(a, draft)
        self.mcp(a, draft)
        for label, value in (
            ("input guardrails", a.input_guardrails),
            ("output guardrails", a.output_guardrails),
        ):
            for g in value or []:
                self.report.add(
                    "not_portable",
                    f"{label[:-1]} {_label(g)} on agent {name} ({where(getattr(g, 'guardrail_function', g))})",
                    "not imported: guardrails have no portable contract; use tool preconditions, "
                    "output_schema or a policy rule for what it checked",
                )
        if a.hooks is not None:
            self.report.add(
                "not_portable",
                f"agent hooks {type(a.hooks).__name__} on agent {name} ({where(type(a.hooks))})",
                "not imported: portagent's trace records model calls, tools and handoffs on every provider",
            )
        if a.tool_use_behavior != "run_llm_again":
            self.report.add(
                "not_portable",
                f"tool_use_behavior {a.tool_use_behavior!r} on agent {name}",
                "not imported: the model always sees tool results and answers itself",
            )
        if a.prompt is not None:
            self.report.add(
                "not_portable",
                f"prompt template on agent {name}",
                "not imported: OpenAI-hosted prompt templates exist on OpenAI only; put the text in "
                "instructions",
            )
        return draft

    def instructions(self, a: Agent[Any], name: str) -> str:
        if isinstance(a.instructions, str) and a.instructions.strip():
            return a.instructions
        if callable(a.instructions):
            self.report.add(
                "not_portable",
                f"dynamic instructions {_label(a.instructions)} on agent {name} ({where(a.instructions)})",
                "not imported: instructions computed by a function at run time; a placeholder was written",
            )
            return placeholder_instructions(
                name, f"the openai-agents agent computed its instructions with {_label(a.instructions)}"
            )
        self.report.add(
            "changed",
            f"agent {name} has no instructions",
            "a placeholder marked [instructions to write] was written",
        )
        return placeholder_instructions(name, "the openai-agents agent had no instructions")

    def model(self, a: Agent[Any], draft: DraftAgent) -> None:
        from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel
        from agents.models import get_default_model

        m = a.model
        if isinstance(m, str):
            draft.models["openai"] = m
        elif isinstance(m, OpenAIChatCompletionsModel | OpenAIResponsesModel):
            draft.models["openai"] = str(m.model)
            if isinstance(m, OpenAIChatCompletionsModel):
                draft.models["openai_api"] = "chat_completions"
                self.report.add(
                    "changed",
                    f"OpenAIChatCompletionsModel on agent {draft.name}",
                    "kept as models.openai_api: chat_completions (an OpenAI-only setting)",
                )
        elif m is None:
            draft.models["openai"] = get_default_model()
            self.report.add(
                "changed",
                f"agent {draft.name} sets no model",
                f"models.openai is the SDK default {get_default_model()!r}",
            )
        else:
            self.report.add(
                "not_portable",
                f"model object {type(m).__name__} on agent {draft.name}",
                "not imported: only OpenAI models map to models.openai; set the model ids yourself",
            )
        settings = a.model_settings
        for field, target in _SHARED_SETTINGS.items():
            value = getattr(settings, field, None)
            if value is not None:
                draft.models[target] = value
                draft.models["force_shared_settings"] = True
                self.report.add(
                    "changed",
                    f"model_settings.{field} of agent {draft.name}",
                    f"imported as models.{target} with force_shared_settings: true (the agent "
                    "used it; other providers apply it too, or refuse it — see port-check)",
                )
        defaults = _sdk_default_settings(m)
        for field, value in sorted(settings.to_json_dict().items()):
            if defaults.get(field) == value:
                continue  # the SDK's own default for this model, not a choice of the agent's author
            if value is not None and field not in _SHARED_SETTINGS and field not in _IGNORED_SETTINGS:
                self.report.add(
                    "not_portable",
                    f"model_settings.{field}={value!r} on agent {draft.name}",
                    "not imported: an OpenAI-only model setting",
                )

    # --- tools -----------------------------------------------------------------------------------

    def tool_or_edge(self, a: Agent[Any], t: Any, draft: DraftAgent) -> None:
        if isinstance(t, FunctionTool) and getattr(t, "_is_agent_tool", False):
            target = getattr(t, "_agent_instance", None)
            if isinstance(target, Agent):
                sub = self.agent(target)
                draft.edges.append(DraftEdge("agent_as_tool", sub, t.description or ""))
                if t.name != sub.name:
                    self.report.add(
                        "changed",
                        f"agent tool {t.name!r} on agent {draft.name}",
                        f"delegation to {sub.name} (agent_as_tool); portagent names the tool after the agent",
                    )
                self.report.add(
                    "note",
                    f"agent tool {t.name!r} on agent {draft.name}",
                    "imported as delegation kind agent_as_tool; as_tool() options such as "
                    "custom_output_extractor or parameters are not read",
                )
                return
            self.report.add(
                "not_portable",
                f"agent tool {t.name!r} on agent {draft.name}",
                "not imported: this openai-agents version does not expose the wrapped agent",
            )
            return
        if isinstance(t, FunctionTool):
            tool = self.function_tool(t, draft.name)
            if tool is not None and tool not in draft.tools:
                draft.tools.append(tool)
            return
        self.report.add(
            "not_portable",
            f"hosted tool {type(t).__name__} ({getattr(t, 'name', '?')}) on agent {draft.name}",
            "not imported: it runs on OpenAI's side; write a ToolSpec with a handler "
            "that does the same if you need it everywhere",
        )

    def function_tool(self, t: FunctionTool, agent: str) -> DraftTool | None:
        if id(t) in self.tools:
            return self.tools[id(t)]
        self.tools[id(t)] = None
        subject = f"function tool {t.name!r} on agent {agent}"
        try:
            fn = t.__wrapped__
        except AttributeError:
            self.report.add(
                "not_portable",
                subject,
                "not imported: a FunctionTool built by hand (no wrapped Python "
                "function to point a handler at); write a handler and a ToolSpec for it",
            )
            return None
        gap = schema_gap(t.params_json_schema)
        if gap:
            refuse_schema_gap(self.report, subject, gap)
            return None
        name = self.tool_names.take(t.name)
        if name != t.name:
            self.report.add("changed", subject, f"renamed {name!r}")
        handler, shim = self.handler(t, fn, name, subject)
        if handler is None and shim is None:
            return None
        origin = f"openai-agents FunctionTool {t.name} ({getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')})"
        tool = DraftTool(
            name=name,
            description=t.description or "",
            input_schema=dict(t.params_json_schema),
            handler=handler or "",
            origin=origin,
            shim=shim,
        )
        if t.strict_json_schema and _has_defaults(fn):
            self.report.add(
                "changed",
                subject,
                "input_schema is the SDK's strict-mode schema: parameters with "
                "defaults are required there (what the model saw on OpenAI)",
            )
        if t.needs_approval is True:
            tool.needs_approval = True
            tool.approval_reason = "needs_approval=True in the openai-agents definition"
            self.rules.append(
                PolicyRuleDraft(f"imported-approval-{name}", "approval_required", tool.approval_reason, name)
            )
        elif callable(t.needs_approval):
            self.report.add(
                "not_portable",
                f"needs_approval={_label(t.needs_approval)} on {subject}",
                "not imported: a per-call approval function; the tool keeps the conservative default "
                "(approval required) — express the condition as a policy rule with 'when' predicates",
            )
        if t.timeout_seconds is not None:
            tool.timeout_ms = max(1, int(t.timeout_seconds * 1000))
        for label, value in (
            ("tool input guardrails", t.tool_input_guardrails),
            ("tool output guardrails", t.tool_output_guardrails),
        ):
            if value:
                self.report.add(
                    "not_portable",
                    f"{label} on {subject}",
                    "not imported: use preconditions or output_schema on the ToolSpec",
                )
        if t.is_enabled is not True:
            self.report.add(
                "not_portable",
                f"is_enabled={_label(t.is_enabled)} on {subject}",
                "not imported: the tool is always offered; use a policy rule to refuse it",
            )
        self.tools[id(t)] = tool
        return tool

    def handler(self, t: FunctionTool, fn: Any, name: str, subject: str) -> tuple[str | None, str | None]:
        """(handler, shim source): the original function, or a shim calling it."""
        module = getattr(fn, "__module__", "")
        direct = function_ref(fn)
        holder = holder_ref(t, [module, source_module(self.ref)])
        expr_ref = direct or (f"{holder}.__wrapped__" if holder else None)
        if expr_ref is None:
            self.report.add(
                "not_portable",
                subject,
                UNIMPORTABLE,
            )
            return None, None
        takes_ctx = _takes_context(fn, t.strict_json_schema)
        if not takes_ctx and not takes_param(fn, "context") and passes_json_through(fn):
            return expr_ref, None
        # The SDK validates the JSON arguments with its own model of the signature and calls the function
        # with what that model gives (a pydantic model, an enum, *args / **kwargs spread): a shim calls
        # the function the same way, through the SDK's own function_schema.
        mod, _, attr = expr_ref.partition(":")
        alias = source_alias(mod)
        self.shim_imports[mod] = f"import {mod} as {alias}"
        fname = shim_function(name)
        strict = bool(t.strict_json_schema)
        if takes_ctx:
            why = (
                "takes openai-agents' run context first; it gets one whose .context reads and writes "
                "portagent's per-session ToolContext.state on every provider, and its arguments "
                "converted as the SDK converts them"
            )
            head, context = f"{TC_PARAM}: ToolContext, **args", f", openai_context({TC_PARAM})"
        else:
            why = (
                "gets its arguments converted as the SDK converts them (its function_schema model: "
                "pydantic models, enums, dates, *args / **kwargs)"
            )
            head, context = "**args", ""
        shim = (
            f"async def {fname}({head}):\n"
            f'    """{mod}.{attr} {why}."""\n'
            "    from portagent.migration.shims import call_openai_tool\n\n"
            f"    return await call_openai_tool({alias}.{attr}, args{context}, strict={strict})\n"
        )
        self.report.add(
            "note" if not takes_ctx else "review",
            subject,
            f"handler is a shim ({fname}) calling {mod}:{attr}: it {why}"
            + (
                " (fields never written read the run's context, else None; usage and other "
                "RunContextWrapper members are not given)"
                if takes_ctx
                else ""
            ),
        )
        for line, what in sdk_context_uses(fn, _first_param(fn) if takes_ctx else None, _OPENAI_UNPORTABLE):
            self.report.add(
                "not_portable",
                f"{what} in {subject} ({line})",
                "no portable equivalent: the call raises AttributeError there; rewrite that part",
            )
        return None, shim

    def handoff(self, h: Any, draft: DraftAgent) -> None:
        if isinstance(h, Agent):
            draft.edges.append(DraftEdge("handoff", self.agent(h), h.handoff_description or ""))
            return
        if isinstance(h, Handoff):
            ref = getattr(h, "_agent_ref", None)
            target = ref() if callable(ref) else None
            if not isinstance(target, Agent):
                self.report.add(
                    "not_portable",
                    f"handoff {h.tool_name!r} on agent {draft.name}",
                    "not imported: its target agent cannot be read from the Handoff object",
                )
                return
            sub = self.agent(target)
            draft.edges.append(DraftEdge("handoff", sub, h.tool_description or ""))
            if h.tool_name != Handoff.default_tool_name(target):
                # The spec has no field for a handoff tool's name: each provider names it from the agent.
                self.report.add(
                    "changed",
                    f"handoff tool {h.tool_name!r} on agent {draft.name}",
                    f"delegation handoff to {sub.name}; portagent names the handoff tool after the agent "
                    f"({Handoff.default_tool_name(target)!r} on openai-agents), not "
                    f"tool_name_override {h.tool_name!r}",
                )
            on_handoff = _on_handoff(h)
            if on_handoff is not None:
                self.report.add(
                    "not_portable",
                    f"handoff on_handoff={_label(on_handoff)} on {draft.name} -> {sub.name} "
                    f"({where(on_handoff)})",
                    "not imported: portable handoffs run no callback; do that work in a tool the "
                    "specialist calls first",
                )
            if h.input_filter is not None:
                self.report.add(
                    "not_portable",
                    f"handoff input_filter={_label(h.input_filter)} on {draft.name} -> {sub.name} "
                    f"({where(h.input_filter)})",
                    "not imported: the specialist sees the whole conversation",
                )
            if h.input_json_schema and h.input_json_schema.get("properties"):
                self.report.add(
                    "not_portable",
                    f"handoff input_type on {draft.name} -> {sub.name}",
                    "not imported: portable handoffs carry no arguments",
                )
            if h.is_enabled is not True:
                self.report.add(
                    "not_portable",
                    f"handoff is_enabled on {draft.name} -> {sub.name}",
                    "not imported: the handoff is always offered",
                )
            return
        self.report.add(
            "not_portable", f"handoff {h!r} on agent {draft.name}", "not imported: unknown handoff type"
        )

    # --- output and MCP --------------------------------------------------------------------------

    def output(self, a: Agent[Any], draft: DraftAgent) -> None:
        ot = a.output_type
        if ot is None or ot is str:
            return
        try:
            schema_obj = ot if isinstance(ot, AgentOutputSchemaBase) else AgentOutputSchema(ot)
            if schema_obj.is_plain_text():
                return
            draft.output_schema = schema_obj.json_schema()
        except Exception as e:
            self.report.add(
                "not_portable",
                f"output_type {_label(ot)} on agent {draft.name}",
                f"not imported: the SDK could not give its JSON Schema ({type(e).__name__}: {e})",
            )
            return
        if isinstance(schema_obj, AgentOutputSchema) and schema_obj._is_wrapped:
            self.report.add(
                "changed",
                f"output_type {_label(ot)} on agent {draft.name}",
                'not an object type: imported as the SDK\'s wrapper schema {"response": …}, so the '
                "final output is that object",
            )
        else:
            self.report.add(
                "note",
                f"output_type {_label(ot)} on agent {draft.name}",
                "imported as output_schema (the SDK's own JSON Schema); outputs are dicts, not "
                "instances of the class",
            )

    def mcp(self, a: Agent[Any], draft: DraftAgent) -> None:
        for server in a.mcp_servers or []:
            params = getattr(server, "params", None)
            name = py_identifier(getattr(server, "name", "mcp"))[:32]
            command = getattr(params, "command", None) if params is not None else None
            url = params.get("url") if isinstance(params, dict) else None
            if command:
                ref: dict[str, Any] = {
                    "name": name,
                    "command": [command, *list(getattr(params, "args", []) or [])],
                    "trust_annotations": False,
                }
                env = getattr(params, "env", None)
                if env:
                    ref["env"] = dict(env)
                cwd = getattr(params, "cwd", None)
                if cwd:
                    ref["cwd"] = str(cwd)
            elif url and type(server).__name__ == "MCPServerStreamableHttp":
                ref = {"name": name, "url": url, "trust_annotations": False}
            else:
                self.report.add(
                    "not_portable",
                    f"MCP server {type(server).__name__} {name!r} on agent {draft.name}",
                    "not imported: portagent attaches stdio and streamable-HTTP servers only",
                )
                continue
            draft.mcp_servers.append(ref)
            self.report.add(
                "review",
                f"MCP server {name!r} on agent {draft.name}",
                "imported into mcp_servers with trust_annotations: false (every tool external_effect); "
                "its tools are now executed by portagent's gateway on every provider",
            )
        if a.mcp_config:
            self.report.add("not_portable", f"mcp_config on agent {draft.name}", "not imported")


def _on_handoff(h: Handoff[Any, Any]) -> Any:
    """The ``on_handoff`` callback ``handoff()`` closed over (openai-agents keeps no public field for it:
    ``on_invoke_handoff`` is a partial over a closure holding it). None when there is none."""
    import functools

    fn: Any = h.on_invoke_handoff
    for _ in range(3):
        if isinstance(fn, functools.partial):
            inner = [a for a in fn.args if callable(a)]
            fn = inner[0] if inner else fn.func
            continue
        break
    try:
        found = inspect.getclosurevars(fn).nonlocals.get("on_handoff")
    except TypeError:
        return None
    return found if callable(found) else None


def _sdk_default_settings(model: Any) -> dict[str, Any]:
    """The model settings openai-agents gives an agent that sets none, for this model."""
    from agents.models import get_default_model, get_default_model_settings

    name = model if isinstance(model, str) else getattr(model, "model", None)
    try:
        out: dict[str, Any] = get_default_model_settings(str(name or get_default_model())).to_json_dict()
    except Exception:
        return {}
    return out


def _first_param(fn: Any) -> str | None:
    try:
        return next(iter(inspect.signature(fn).parameters), None)
    except (TypeError, ValueError):
        return None


def _takes_context(fn: Any, strict: bool) -> bool:
    """Whether the SDK passes ``fn`` its run context first, read as the SDK read it: with the tool's own
    strictness (a strict schema refuses ``**kwargs``, so asking in strict mode answered no for them)."""
    try:
        return bool(function_schema(fn, strict_json_schema=strict).takes_context)
    except Exception:
        return False


def _has_defaults(fn: Any) -> bool:
    try:
        return any(
            p.default is not inspect.Parameter.empty for p in inspect.signature(fn).parameters.values()
        )
    except (TypeError, ValueError):
        return False


def _label(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or getattr(obj, "name", None) or type(obj).__name__
