"""Reading an anthropic SDK tool-runner program (anthropic 2.14) into an ``ImportDraft``.

A program on the plain Messages API has no agent object: the agent is the arguments of its loop. What
can be read faithfully is the **tool-runner keyword arguments** kept in one module-level dict and used as
``client.beta.messages.tool_runner(**AGENT, messages=...)`` (or ``messages.create(**AGENT, ...)``)::

    AGENT = dict(model=MODEL, system=SYSTEM, tools=[get_order, search_faq], max_tokens=1024)

``portagent import shop:AGENT --from anthropic`` reads that dict. Anything else (a client, a runner, a
function holding the loop, a module) is refused with one message naming what was found: the loop
itself is arbitrary code.

| anthropic | portagent |
|---|---|
| ``model`` | ``models.anthropic`` |
| ``system`` (a string, or text blocks) | ``instructions`` |
| ``tools``: ``@beta_tool`` / ``@beta_async_tool`` functions | ToolSpecs: the SDK's ``input_schema``, handler ``module:name.func`` |
| ``max_tokens``, ``temperature`` | shared settings, forced (the program really sent them) |
| ``output_config.format`` (``json_schema``) | ``output_schema`` |

Everything else — tool definitions given as plain dicts (server tools such as web search, or a schema
whose code lives in the program's own loop), ``thinking``, ``tool_choice``, ``betas``, ``cache_control`` …
— is listed in the report. There are no handoffs or sub-agents in a tool runner.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from portagent.adapters.base import package_version
from portagent.migration.draft import DraftAgent, DraftTool, ImportDraft
from portagent.migration.importing import (
    UNIMPORTABLE,
    ReaderState,
    a_type,
    function_ref,
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
from portagent.migration.static_read import Reader, Unreadable, call_chain, enclosing, module_tree, qualnames

EXPECTED = (
    "the keyword arguments of a tool runner: a dict with 'model' and 'tools' (functions decorated with "
    "@beta_tool or @beta_async_tool) and usually 'system', used as "
    "client.beta.messages.tool_runner(**AGENT, messages=...) (docs/migration.md)"
)
_SHARED = ("max_tokens", "temperature")
_IGNORED = ("messages", "stream", "thread")
"""Per-run arguments: the conversation is the run's input, streaming is ``--stream``, and a server-held
thread only changes what each request repeats (portagent's adapter sends the whole conversation). None
is dropped silently: a seed conversation is listed as not imported, ``stream`` noted (``_per_run``)."""


def read_anthropic(ref: str, obj: Any) -> ImportDraft:
    """The draft of a tool-runner or ``messages.create`` program found at ``ref`` (``importing.import_native`` turns what no reader here
    foresaw into one message)."""
    from portagent.contracts.errors import UsageError

    if isinstance(obj, types.ModuleType) or (inspect.isfunction(obj) and _holds_a_call(obj)):
        return _read_program(ref, obj)
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


def _read_kwargs(ref: str, raw_name: str, obj: Mapping[str, Any], program: _Program | None) -> ImportDraft:
    """The tool runner's (or ``messages.create``'s) keyword arguments → a draft. ``program``: read from
    the program's calls (what could not be read there is reported, each with its ``file:line``)."""
    from anthropic.lib.tools import BetaAsyncFunctionTool, BetaFunctionTool

    obj = {k: _plain(v) if k in _PLAIN_KEYS else v for k, v in obj.items()}
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
            tool = _dict_tool(t, program, reader)
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
            *_IGNORED,
        ):
            continue
        report.add(
            "not_portable", f"{key}={obj[key]!r}"[:120], "not imported: an Anthropic-only request setting"
        )
    _per_run(obj, name, report)
    return reader.draft("anthropic", draft)


_PLAIN_KEYS = frozenset({"model", "system", "max_tokens", "temperature", "max_iterations", "output_config"})
"""The arguments whose values go into the spec as data."""


def _plain(value: Any) -> Any:
    """Plain data of a value the program gave (a ``str``/``int`` enum member → its value, nested too),
    so that what is written is what the SDK sent."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


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


# --- a program: the arguments of its tool_runner / messages.create calls --------------------------------

_CALL_NAMES = frozenset({"tool_runner", "create", "stream", "parse"})
"""``client[.beta].messages.<this>(...)``: the calls whose keyword arguments are the agent."""


def _is_agent_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    chain = call_chain(node)
    return len(chain) >= 2 and chain[-1] in _CALL_NAMES and chain[-2] == "messages"


def _holds_a_call(fn: Any) -> bool:
    """Whether a function's own source holds a ``messages.create`` / ``tool_runner`` call."""
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (TypeError, OSError, SyntaxError):
        return False
    return any(_is_agent_call(n) for n in ast.walk(tree))


@dataclass
class _Program:
    """Where the agent was read from in the program, and what could not be read there."""

    module: types.ModuleType
    reader: Reader
    calls: list[ast.Call]
    unread: dict[str, Unreadable] = field(default_factory=dict)
    unread_tools: list[Unreadable] = field(default_factory=list)
    """Elements of the tools list that could not be read (the others were)."""
    differs: list[str] = field(default_factory=list)

    def report_into(self, report: ImportReport, name: str) -> None:
        where = ", ".join(self.reader.at(c) for c in self.calls)
        report.add("note", f"agent {name}", f"read from the keyword arguments of the call(s) at {where}")
        for key, u in self.unread.items():
            if key == "model":
                continue
            report.add(
                "not_portable",
                f"{key if key.startswith('**') else f'{key}={u.source}'} ({u.at})",
                f"not read: {u.why}; "
                + (
                    "a placeholder was written for instructions"
                    if key == "system"
                    else "no tools were imported from it; write their ToolSpecs by hand"
                    if key == "tools"
                    else "set it by hand if the spec has a field for it"
                ),
            )
        for u in self.unread_tools:
            report.add(
                "not_portable",
                f"tool {u.source} ({u.at})",
                f"not read: {u.why}; write its ToolSpec by hand (the list's other tools were imported)",
            )
        for env in {(e.kind, e.name, e.at): e for e in self.reader.envs}.values():
            if env.kind == "parameter":
                report.add(
                    "changed",
                    f"the parameter {env.name} ({env.at})",
                    f"imported as its default {env.default!r}; a caller may pass another: check the spec's "
                    "value",
                )
                continue
            report.add(
                "changed",
                f"the environment variable {env.name} ({env.at})",
                f"imported as {env.default!r} (its default, or the value it had while importing); the "
                "program reads the variable each time it runs: check the spec's value",
            )
        for text in self.differs:
            report.add("changed", text, "the first call's value was imported; check it")


def _read_program(ref: str, obj: Any) -> ImportDraft:
    """A module (the agent looked for in it) or a function holding the loop: read the keyword arguments
    of its ``messages.tool_runner`` / ``messages.create`` / ``stream`` / ``parse`` calls."""
    from portagent.contracts.errors import UsageError

    module = obj if isinstance(obj, types.ModuleType) else sys.modules.get(obj.__module__)
    parsed = module_tree(module) if module is not None else None
    if module is None or parsed is None:
        raise UsageError(f"{ref}: its source cannot be read, so no tool-runner call can be found in it")
    tree, text, file = parsed
    reader = Reader(module, text, file, tree)
    owner = enclosing(tree)
    names = qualnames(tree)
    groups: dict[str, tuple[ast.AST | None, list[ast.Call]]] = {}
    for node in ast.walk(tree):
        if _is_agent_call(node):
            fn = owner.get(node)
            # a call in a nested function belongs to the outermost one (the name that can be imported)
            key = (names.get(fn, "") if fn is not None else "").partition(".<locals>.")[0]
            groups.setdefault(key, (fn, []))[1].append(node)  # type: ignore[arg-type]
    dicts = {}
    if isinstance(obj, types.ModuleType):
        dicts = {
            k: v
            for k, v in vars(module).items()
            if isinstance(v, Mapping) and "model" in v and "tools" in v and not k.startswith("_")
        }
    else:
        wanted = obj.__qualname__
        groups = {k: v for k, v in groups.items() if k == wanted}
    for _, calls in groups.values():  # a call spreading a module-level dict is that dict's agent
        for call in calls:
            for kw in call.keywords:
                if kw.arg is None and isinstance(kw.value, ast.Name):
                    dicts.pop(kw.value.id, None)
    stem = module.__name__.rpartition(".")[2]
    candidates = [
        (k, f"{file}:{getattr(v, 'lineno', '?')}") for k, v in ((k, _line_of(tree, k)) for k in dicts)
    ]
    candidates += [(k or "<module>", reader.at(calls[0])) for k, (_, calls) in groups.items()]
    if not candidates:
        raise UsageError(
            f"{ref}: no agent found in {file}: no client.messages.create(...) / "
            "client.beta.messages.tool_runner(...) call and no dict of its arguments; --from anthropic "
            f"reads {EXPECTED}"
        )
    if len(candidates) > 1:
        listed = "; ".join(f"{module.__name__}:{k} ({at})" for k, at in candidates if k != "<module>")
        top = [at for k, at in candidates if k == "<module>"]
        raise UsageError(
            f"{ref}: {len(candidates)} agents found in {file}; choose one: {listed}"
            + (f" (the calls at the module's top level, {top[0]}, cannot be chosen by name)" if top else "")
        )
    chosen = candidates[0][0]
    if chosen in dicts:
        return read_anthropic(f"{module.__name__}:{chosen}", dicts[chosen])
    calls = groups["" if chosen == "<module>" else chosen][1]
    program = _Program(module, reader, calls)
    kwargs = _merge_calls(program, owner)
    if "model" not in kwargs:
        u = program.unread.get("model")
        raise UsageError(
            f"{ref}: the model of the call at {reader.at(calls[0])} cannot be read"
            + (f": {u.source}, {u.why}" if u else " (no model= argument)")
            + "; give it as a constant (MODEL = 'claude-...') or a dict of the runner's arguments"
        )
    if not isinstance(kwargs["model"], str) or not kwargs["model"]:
        raise UsageError(
            f"{ref}: the model of the call at {reader.at(calls[0])} is {kwargs['model']!r}, not a model id"
        )
    kwargs.setdefault("tools", [])  # none given (a plain chat), or not read (reported)
    raw = stem if isinstance(obj, types.ModuleType) or chosen == "<module>" else chosen.rpartition(".")[2]
    return _read_kwargs(f"{module.__name__}:{chosen}", raw.lower(), kwargs, program)


def _line_of(tree: ast.Module, name: str) -> ast.AST | None:
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
    return None


def _merge_calls(program: _Program, owner: Mapping[ast.AST, ast.AST | None]) -> dict[str, Any]:
    """The calls' keyword arguments, the first call's value kept where two differ (a loop's follow-up
    call often repeats the first one; one that leaves ``system`` out does not remove it)."""
    out: dict[str, Any] = {}
    first_at: dict[str, str] = {}
    reader = program.reader
    for call in program.calls:
        scope = owner.get(call)  # the function holding this call
        found: dict[str, Any] = {}
        for kw in call.keywords:
            if kw.arg is None and isinstance(kw.value, ast.Dict):  # **{**BASE, "system": s}: entry by entry
                found.update(_dict_entries(program, kw.value, scope))
                continue
            try:
                if kw.arg is None:
                    spread = reader.value(kw.value, scope)
                    if not isinstance(spread, Mapping):
                        raise reader.fail(kw.value, "not a dict")
                    found.update(spread)
                elif kw.arg not in _IGNORED:
                    found[kw.arg] = reader.value(kw.value, scope)
            except Unreadable as u:
                partial = reader.items(kw.value, scope) if kw.arg == "tools" else None
                if partial is not None and "tools" not in out:  # the elements that can be read
                    found["tools"], failed = partial
                    program.unread_tools.extend(failed)
                    continue
                key = kw.arg or f"**{reader.source(kw.value)}"
                whole = reader.source(kw.value)
                why = u.why if u.source == whole else f"{u.source}: {u.why}"
                if key not in out:
                    program.unread.setdefault(key, Unreadable(whole, reader.at(kw.value), why))
        for key, value in found.items():
            if key in _IGNORED:
                continue
            if key not in out:
                out[key] = value
                first_at[key] = reader.at(call)
                program.unread.pop(key, None)
            elif _differs(out[key], value):
                program.differs.append(
                    f"{key} differs between the calls at {first_at[key]} and {reader.at(call)}"
                )
    return out


def _dict_entries(program: _Program, node: ast.Dict, scope: ast.AST | None) -> dict[str, Any]:
    """A dict written in the call (``**{**BASE, "system": s}``): each entry read on its own, what cannot
    be read recorded under its key."""
    reader = program.reader
    out: dict[str, Any] = {}
    for k, v in zip(node.keys, node.values, strict=True):
        key = f"**{reader.source(v)}" if k is None else reader.source(k).strip("'\"")
        try:
            if k is None:
                spread = reader.value(v, scope)
                if not isinstance(spread, Mapping):
                    raise reader.fail(v, "not a dict")
                out.update(spread)
            else:
                out[str(reader.value(k, scope))] = reader.value(v, scope)
        except Unreadable as u:
            whole = reader.source(v)
            why = u.why if u.source == whole else f"{u.source}: {u.why}"
            program.unread.setdefault(key, Unreadable(whole, reader.at(v), why))
    return out


def _differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:
        return True


def _dict_tool(t: Mapping[str, Any], program: _Program, reader: ReaderState) -> DraftTool | None:
    """A hand-written tool definition (``{"name", "description", "input_schema"}``) whose code is the
    program's: the function of the same name, or the one a dispatch dict of the program maps its name to."""
    raw = t.get("name")
    subject = f"tool definition {raw!r}"
    if not isinstance(raw, str) or not raw:
        reader.report.add("not_portable", subject, "not imported: a tool definition without a name")
        return None
    schema = t.get("input_schema")
    if isinstance(schema, Mapping) and schema.get("type") == "object" and "properties" not in schema:
        schema = {**schema, "properties": {}}  # a tool without arguments, as the API reads it
    gap = schema_gap(schema)
    if gap or not isinstance(schema, dict):
        refuse_schema_gap(reader.report, subject, gap or "no input_schema")
        return None
    found = _dispatch_target(raw, program)
    if found is None:
        reader.report.add(
            "not_portable",
            f"{subject} ({program.reader.file})",
            "not imported: no function of the program could be found for it (none has its name, and no "
            "dict of the program maps its name to one); write a handler for it and add its ToolSpec",
        )
        return None
    fn, how = found
    handler = function_ref(fn)
    if handler is None:
        reader.report.add("not_portable", f"{subject} ({where(fn)})", UNIMPORTABLE)
        return None
    problem = _binds(fn, schema)
    if problem:
        reader.report.add(
            "not_portable",
            f"{subject} ({where(fn)})",
            f"not imported: {fn.__qualname__} {problem}, so it cannot be called with the tool's arguments "
            "as keywords (portagent calls handler(**arguments)); write a handler that takes them",
        )
        return None
    name = reader.tool_names.take(raw)
    if name != raw:
        reader.report.add("changed", subject, f"renamed {name!r}")
    for key, value in sorted(t.items()):
        if key not in ("name", "description", "input_schema", "type"):
            reader.report.add(
                "not_portable",
                f"{key}={value!r} on {subject}"[:160],
                "not imported: an Anthropic-only tool option",
            )
    reader.report.add(
        "review",
        f"{subject} ({where(fn)})",
        f"handler {handler}: {how}; portagent calls it with the arguments as keywords and sends back what "
        "it returns — check that the program's loop did no more than that",
    )
    return DraftTool(
        name=name,
        description=str(t.get("description") or ""),
        input_schema=_plain(schema),
        handler=handler,
        origin=f"anthropic tool definition {raw} ({fn.__module__}.{fn.__qualname__})",
    )


def _dispatch_target(name: str, program: _Program) -> tuple[Any, str] | None:
    module = program.module
    for value in vars(module).values():  # a module-level dict mapping tool names to functions
        if isinstance(value, Mapping) and callable(value.get(name)) and inspect.isfunction(value.get(name)):
            return value[name], "the program's dispatch dict maps the tool's name to it"
    for node in ast.walk(program.reader.tree):  # a dispatch dict written inside a function
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == name and isinstance(v, ast.Name):
                    fn = getattr(module, v.id, None)
                    if inspect.isfunction(fn):
                        return fn, f"the dict at {program.reader.at(node)} maps the tool's name to it"
    fn = getattr(module, name, None)
    if inspect.isfunction(fn):
        return fn, "the program's function of the tool's name"
    return None


def _binds(fn: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``fn(**arguments)`` would fail for arguments of ``schema`` (None when it takes them)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return "has no signature to check"
    props = set(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        names = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        unknown = sorted(props - names)
        if unknown:
            return f"takes no parameter {', '.join(unknown)} (its parameters: {', '.join(params) or 'none'})"
    needs = sorted(
        n
        for n, p in params.items()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in required
    )
    if needs:
        return f"requires {', '.join(needs)}, which the schema does not require"
    return None
