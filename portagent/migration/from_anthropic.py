"""Reading an anthropic SDK program (anthropic 2.14+) into an ``ImportDraft``.

A program on the plain Messages API has no agent object: the agent is the arguments of its loop. They are
read from the program's ``client[.beta].messages.tool_runner(...)`` / ``messages.create(...)`` calls
without running them (``from_anthropic_program``), or from a module-level dict of them spread into the
call::

    AGENT = dict(model=MODEL, system=SYSTEM, tools=[get_order, search_faq], max_tokens=1024)

| anthropic | portagent |
|---|---|
| ``model`` | ``models.anthropic`` |
| ``system`` (a string, or text blocks) | ``instructions`` |
| ``tools``: ``@beta_tool`` / ``@beta_async_tool`` functions | ToolSpecs: the SDK's ``input_schema``, handler a shim through the SDK's tool |
| ``tools``: hand-written definitions (dicts) | ToolSpecs, handler the program's function for it, called as the program's loop calls it (``from_anthropic_dispatch``) |
| ``max_tokens``, ``temperature`` | shared settings, forced (the program really sent them) |
| ``output_config.format`` (``json_schema``) | ``output_schema`` |

Everything else — server tools (web search…), ``thinking``, ``tool_choice``, ``betas``, ``cache_control`` …
— is listed in the report. There are no handoffs or sub-agents in a tool runner.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from typing import Any

from portagent.adapters.base import package_version
from portagent.migration.draft import DraftAgent, DraftTool, ImportDraft
from portagent.migration.from_anthropic_dispatch import dict_tool
from portagent.migration.from_anthropic_program import (
    EXPECTED,
    IGNORED,
    Program,
    holds_a_call,
    plain,
    read_program,
)
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

_SHARED = ("max_tokens", "temperature")


def read_anthropic(ref: str, obj: Any) -> ImportDraft:
    """The draft of a tool-runner or ``messages.create`` program found at ``ref`` (``importing.import_native`` turns what no reader here
    foresaw into one message)."""
    from portagent.contracts.errors import UsageError

    if isinstance(obj, types.ModuleType) or (inspect.isfunction(obj) and holds_a_call(obj)):
        found_ref, kwargs, raw, program = read_program(ref, obj)
        if program is None or raw is None:  # a module-level dict of the runner's arguments
            return read_anthropic(found_ref, kwargs)
        return _read_kwargs(found_ref, raw, kwargs, program)
    if not isinstance(obj, Mapping):
        raise UsageError(
            f"{ref} is {a_type(obj)}; --from anthropic reads {EXPECTED}{other_sdk_hint(obj, 'anthropic')}"
        )
    missing = [k for k in ("model", "tools") if k not in obj]
    if missing or not isinstance(obj.get("model"), str) or not isinstance(obj.get("tools"), list | tuple):
        found = ", ".join(sorted(map(str, obj))) or "nothing"
        raise UsageError(
            f"{ref} is a dict with {found}; --from anthropic reads {EXPECTED} "
            "('model' a string, 'tools' a list)"
        )
    return _read_kwargs(ref, ref.rpartition(":")[2].split(".")[-1].lower(), obj, None)


def _read_kwargs(ref: str, raw_name: str, obj: Mapping[str, Any], program: Program | None) -> ImportDraft:
    """The tool runner's (or ``messages.create``'s) keyword arguments → a draft. ``program``: read from
    the program's calls (what could not be read there is reported, each with its ``file:line``)."""
    from anthropic.lib.tools import BetaAsyncFunctionTool, BetaFunctionTool

    obj = {k: plain(v) if k in _PLAIN_KEYS else v for k, v in obj.items()}
    report = ImportReport(sdk=f"anthropic {package_version('anthropic')}", source=ref)
    reader = ReaderState(report)
    name = reader.agent_names.take(raw_name)
    draft = DraftAgent(name=name, instructions="")
    if program is not None:
        program.report_into(report, name)
    if program is not None and "system" in program.unread:
        draft.instructions = placeholder_instructions(
            name, "the program's system prompt is computed at run time"
        )
    else:
        draft.instructions = _instructions(obj.get("system"), name, report)
    max_iterations = obj.get("max_iterations")
    if isinstance(max_iterations, int) and not isinstance(max_iterations, bool) and max_iterations >= 1:
        draft.budget["max_turns"] = max_iterations
        report.add("changed", f"max_iterations={max_iterations}", "imported as budget.max_turns")
    draft.models["anthropic"] = obj["model"]
    for key in _SHARED:
        value = obj.get(key)
        if value is not None:
            draft.models[key] = value
            draft.models["force_shared_settings"] = True
            report.add(
                "changed",
                f"{key}={value!r}",
                f"imported as models.{key} with force_shared_settings: true (the program sent it; other "
                "providers apply it too, or refuse it — see port-check)",
            )
    for t in obj["tools"]:
        if isinstance(t, BetaFunctionTool | BetaAsyncFunctionTool):
            tool = _tool(t, ref, reader)
            if tool is not None:
                draft.tools.append(tool)
        elif isinstance(t, Mapping) and program is not None and (t.get("type") or "custom") == "custom":
            tool = dict_tool(t, program, reader)
            if tool is not None:
                draft.tools.append(tool)
        elif isinstance(t, Mapping):
            kind = t.get("type") or "custom"
            report.add(
                "not_portable",
                f"tool definition {t.get('name', '?')!r} (type {kind}, a plain dict)",
                "not imported: a server tool runs at Anthropic, and a hand-written definition's code lives "
                "in the program's own loop; write a ToolSpec and a handler for it",
            )
        else:
            named = getattr(t, "name", None) or getattr(t, "__name__", None)
            at = f", {where(t)}" if callable(t) and not hasattr(t, "to_dict") else ""
            report.add(
                "not_portable",
                f"tool {type(t).__qualname__}" + (f" {named!r}" if named else "") + at,
                "not imported: only @beta_tool / @beta_async_tool functions point at a Python function"
                + (" (decorate it with @beta_tool)" if at else ""),
            )
    _output(obj.get("output_config"), draft, report)
    if obj.get("output_format") is not None:
        _output_format(obj["output_format"], draft, report)
    for key in sorted(map(str, obj)):
        if key in (
            "model",
            "tools",
            "system",
            "output_config",
            "output_format",
            "max_iterations",
            *_SHARED,
            *IGNORED,
        ):
            continue
        report.add(
            "not_portable", f"{key}={obj[key]!r}"[:120], "not imported: an Anthropic-only request setting"
        )
    _per_run(obj, name, report)
    return reader.draft("anthropic", draft)


_PLAIN_KEYS = frozenset({"model", "system", "max_tokens", "temperature", "max_iterations", "output_config"})
"""The arguments whose values go into the spec as data."""


def _per_run(obj: Mapping[str, Any], name: str, report: ImportReport) -> None:
    """What the dict holds of one run: a seed conversation (``messages``) a spec has no field for, and
    ``stream``, which portagent decides per run."""
    messages = obj.get("messages")
    if messages:
        count = len(messages) if isinstance(messages, list | tuple) else 1
        report.add(
            "not_portable",
            f"messages: a seed conversation of {count} message(s) on agent {name}",
            "not imported: a spec has no seed conversation (a run starts from its input); put what it "
            "tells the model into instructions, or send it as the run's input",
        )
    if obj.get("stream"):
        report.add(
            "note",
            f"stream={obj['stream']!r} on agent {name}",
            "not carried over: portagent streams a run when asked (portagent run --stream)",
        )


def _instructions(system: Any, name: str, report: ImportReport) -> str:
    if isinstance(system, str) and system.strip():
        return system
    if isinstance(system, list | tuple):
        texts = [b.get("text", "") for b in system if isinstance(b, Mapping) and b.get("type") == "text"]
        texts = [t for t in texts if isinstance(t, str) and t.strip()]  # an empty block adds nothing
        others = [b for b in system if not (isinstance(b, Mapping) and b.get("type") == "text")]
        if others:
            report.add(
                "not_portable",
                f"{len(others)} system block(s) that are not text",
                "not imported: instructions are text",
            )
        if texts:
            report.add(
                "changed",
                "system given as text blocks",
                "joined into one instructions text (block options such as cache_control are not kept; "
                "pass prompt caching with RunOptions.extra['anthropic_cache_control'])",
            )
            return "\n\n".join(texts)
    report.add(
        "changed",
        f"agent {name} has no system prompt",
        "a placeholder marked [instructions to write] was written",
    )
    return placeholder_instructions(name, "the tool runner had no usable system prompt")


def _tool(t: Any, ref: str, reader: ReaderState) -> DraftTool | None:
    fn = t.func
    subject = f"tool {t.name!r}"
    gap = schema_gap(t.input_schema)
    if gap:
        refuse_schema_gap(reader.report, subject, gap)
        return None
    handler = tool_object_ref(reader.report, subject, t, fn, ref)
    if handler is None:
        return None
    name = reader.tool_names.take(t.name)
    if name != t.name:
        reader.report.add("changed", subject, f"renamed {name!r}")
    for key, value in sorted(t.to_dict().items()):
        if key not in ("name", "description", "input_schema"):
            reader.report.add(
                "not_portable",
                f"{key}={value!r} on {subject}"[:160],
                "not imported: an Anthropic-only tool option",
            )
    # Called through the SDK's tool (its arguments converted as the tool runner converts them), and it
    # returns its tool_result content (text) where a portagent handler returns a value: a shim.
    mod, _, attr = handler.partition(":")
    alias = source_alias(mod)
    reader.shim_imports[mod] = f"import {mod} as {alias}"
    fname = shim_function(name)
    why = (
        "gets its arguments converted as the tool runner converts them and returns its tool_result "
        "content as text; JSON text is read back as its value"
    )
    reader.report.add("note", subject, f"handler is a shim ({fname}) calling {mod}:{attr}: it {why}")
    return DraftTool(
        name=name,
        description=t.description or "",
        input_schema=dict(t.input_schema),
        handler="",
        origin=f"anthropic {type(t).__name__} {t.name} ({fn.__module__}.{fn.__qualname__})",
        shim=(
            f"async def {fname}(**args):\n"
            f'    """{mod}.{attr} {why}."""\n'
            f"    return await call_anthropic_tool({alias}.{attr}, **args)\n"
        ),
    )


def _output_format(output_format: Any, draft: DraftAgent, report: ImportReport) -> None:
    """``output_format=Model`` (the tool runner's structured output): the JSON schema the SDK sends for it
    (``output_config.format``, built by the SDK's own conversion) becomes ``output_schema``."""
    subject = f"output_format={getattr(output_format, '__qualname__', repr(output_format))}"[:120]
    if draft.output_schema is not None:
        report.add("not_portable", subject, "not imported: output_config.format already gave the schema")
        return
    try:
        from anthropic.lib._parse._transform import to_json_output_format

        schema = to_json_output_format(output_format)["schema"]
    except Exception as e:  # not a type pydantic can describe, or the SDK moved its conversion
        report.add("not_portable", subject, f"not imported: no JSON schema could be made of it ({e})"[:300])
        return
    draft.output_schema = dict(schema)
    report.add(
        "changed",
        subject,
        "imported as output_schema: the JSON schema the SDK sends for it; the answer is checked against "
        "it, and is JSON data rather than an instance of the class",
    )


def _output(config: Any, draft: DraftAgent, report: ImportReport) -> None:
    if config is None:
        return
    fmt = config.get("format") if isinstance(config, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        draft.output_schema = dict(fmt["schema"])
        rest = {k: v for k, v in config.items() if k != "format"}
    else:
        rest = dict(config) if isinstance(config, Mapping) else {"output_config": config}
    for key, value in rest.items():
        report.add("not_portable", f"output_config.{key}={value!r}"[:120], "not imported: Anthropic-only")
