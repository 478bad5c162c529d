"""Reading an anthropic SDK program's agent from its source without running it: the keyword arguments of
its ``client[.beta].messages.tool_runner`` / ``create`` / ``stream`` / ``parse`` calls (several calls of one
loop merged, the first call's value kept), or a module-level dict of them spread into the call. What cannot
be read is kept with its ``file:line`` for the report (``Program``). ``from_anthropic`` turns what is found
into the draft; ``from_anthropic_dispatch`` finds the code of hand-written tool definitions.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from portagent.migration.report import ImportReport
from portagent.migration.static_read import Reader, Unreadable, call_chain, enclosing, module_tree, qualnames

EXPECTED = (
    "the keyword arguments of a tool runner: a dict with 'model' and 'tools' (functions decorated with "
    "@beta_tool or @beta_async_tool) and usually 'system', used as "
    "client.beta.messages.tool_runner(**AGENT, messages=...) (docs/migration.md)"
)

IGNORED = ("messages", "stream", "thread")
"""Per-run arguments: the conversation is the run's input, streaming is ``--stream``, and a server-held
thread only changes what each request repeats (portagent's adapter sends the whole conversation). None
is dropped silently: a seed conversation is listed as not imported, ``stream`` noted (``_per_run``)."""


_CALL_NAMES = frozenset({"tool_runner", "create", "stream", "parse"})
"""``client[.beta].messages.<this>(...)``: the calls whose keyword arguments are the agent."""


def _is_agent_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    chain = call_chain(node)
    return len(chain) >= 2 and chain[-1] in _CALL_NAMES and chain[-2] == "messages"


def holds_a_call(fn: Any) -> bool:
    """Whether a function's own source holds a ``messages.create`` / ``tool_runner`` call."""
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (TypeError, OSError, SyntaxError):
        return False
    return any(_is_agent_call(n) for n in ast.walk(tree))


@dataclass
class Program:
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


def read_program(ref: str, obj: Any) -> tuple[str, Mapping[str, Any], str | None, Program | None]:
    """A module (the agent looked for in it) or a function holding the loop: read the keyword arguments
    of its ``messages.tool_runner`` / ``messages.create`` / ``stream`` / ``parse`` calls. (ref, the
    arguments, the agent's raw name, the program) — or, for a module-level dict of the runner's arguments,
    (its ref, the dict, None, None)."""
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
        return f"{module.__name__}:{chosen}", dicts[chosen], None, None
    calls = groups["" if chosen == "<module>" else chosen][1]
    program = Program(module, reader, calls)
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
    return f"{module.__name__}:{chosen}", kwargs, raw.lower(), program


def _line_of(tree: ast.Module, name: str) -> ast.AST | None:
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
    return None


def _merge_calls(program: Program, owner: Mapping[ast.AST, ast.AST | None]) -> dict[str, Any]:
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
                elif kw.arg not in IGNORED:
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
            if key in IGNORED:
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


def _dict_entries(program: Program, node: ast.Dict, scope: ast.AST | None) -> dict[str, Any]:
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


def plain(value: Any) -> Any:
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
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value
