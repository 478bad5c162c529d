"""The code behind an anthropic program's hand-written tool definitions (``{"name", "description",
"input_schema"}`` dicts in ``tools=``): the program's function for each — the function of the tool's
name, or the one a dispatch dict maps the name to — and how the program's loop calls it, read from its
call sites without running them:

- ``TOOLS[block.name](**block.input)`` (or a function of the tool's name called with keywords): the
  arguments as keywords, which is how portagent calls a handler — the function is the handler;
- ``TOOLS[block.name](block.input)``, ``fn = TOOLS.get(name); fn(tool_use.input)``, or a helper
  ``execute(name, args)`` called with ``block.input`` that calls ``TOOLS[name](args)``: the whole input
  dict as one argument — a generated shim gathers the keyword arguments back into that dict;
- no call site telling either (the function is called through code the import cannot follow): the
  function is used as a handler when its parameters take the arguments as keywords, else the tool is
  left out with the reason in the report.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from portagent.migration.draft import DraftTool
from portagent.migration.from_anthropic_program import Program, plain
from portagent.migration.importing import (
    UNIMPORTABLE,
    ReaderState,
    function_ref,
    refuse_schema_gap,
    schema_gap,
    shim_function,
    source_alias,
    where,
)
from portagent.migration.static_read import assignments, enclosing, module_tree


def dict_tool(t: Mapping[str, Any], program: Program, reader: ReaderState) -> DraftTool | None:
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
    style = call_style(fn, raw, program)
    problem = _takes_one(fn) if style.kind == "dict" else _binds(fn, schema)
    if problem:
        unknown = (
            "; no call of it in the program shows it is given the tool_use block's whole input "
            "(fn(block.input)), so how it is called cannot be known"
            if style.kind is None and _one_positional(fn)
            else ""
        )
        called = (
            f"with the tool_use block's whole input as one argument ({', '.join(style.at)})"
            if style.kind == "dict"
            else "with the tool's arguments as keywords (portagent calls handler(**arguments))"
        )
        reader.report.add(
            "not_portable",
            f"{subject} ({where(fn)})",
            f"not imported: {fn.__qualname__} {problem}, so it cannot be called {called}{unknown}; write a "
            "handler that takes them",
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
    origin = f"anthropic tool definition {raw} ({fn.__module__}.{fn.__qualname__})"
    if style.kind == "dict":
        # The program's loop hands the function the tool_use block's ``input`` dict as one argument; a
        # portagent handler gets the arguments as keywords: a shim gathers them back into that dict.
        mod, _, attr = handler.partition(":")
        alias = source_alias(mod)
        reader.shim_imports[mod] = f"import {mod} as {alias}"
        fname = shim_function(name)
        at = ", ".join(style.at)
        reader.report.add(
            "review",
            f"{subject} ({where(fn)})",
            f"handler {handler}: {how}; the program calls it with the tool_use block's whole input dict as "
            f"one argument ({at}): a shim ({fname}) passes it the arguments as that one dict and sends back "
            "what it returns — check that the program's loop did no more than that",
        )
        return DraftTool(
            name=name,
            description=str(t.get("description") or ""),
            input_schema=plain(schema),
            handler="",
            origin=origin,
            shim=(
                f"async def {fname}(**args):\n"
                f'    """{mod}.{attr} takes the tool\'s arguments as one dict, as the program\'s loop called it."""\n'
                f"    return await call_original({alias}.{attr}, args)\n"
            ),
        )
    reader.report.add(
        "review",
        f"{subject} ({where(fn)})",
        f"handler {handler}: {how}; portagent calls it with the arguments as keywords"
        + (f", as the program does ({', '.join(style.at)})" if style.kind == "kwargs" else "")
        + " and sends back what it returns — check that the program's loop did no more than that",
    )
    return DraftTool(
        name=name,
        description=str(t.get("description") or ""),
        input_schema=plain(schema),
        handler=handler,
        origin=origin,
    )


def _dispatch_target(name: str, program: Program) -> tuple[Any, str] | None:
    """The program's function for tool ``name``: the one a module-level dict maps the name to (in the
    program or a module of its own it imports, ``import shop_tools``), the one a dict written in a
    function maps it to, or the function of the tool's name."""
    module = program.module
    for mod in _program_modules(program):  # a module-level dict mapping tool names to functions
        for value in vars(mod).values():
            if isinstance(value, Mapping) and inspect.isfunction(_get(value, name)):
                return value[name], "the program's dispatch dict maps the tool's name to it"
    for node in ast.walk(program.reader.tree):  # a dispatch dict written inside a function
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == name and isinstance(v, ast.Name):
                    fn = getattr(module, v.id, None)
                    if inspect.isfunction(fn):
                        return fn, f"the dict at {program.reader.at(node)} maps the tool's name to it"
    for mod in _program_modules(program):
        fn = getattr(mod, name, None)
        if inspect.isfunction(fn):
            return fn, "the program's function of the tool's name" + (
                f" (in {mod.__name__})" if mod is not module else ""
            )
    return None


def _program_modules(program: Program) -> list[Any]:
    """The program's module, then the modules of the program's own it imports as modules (``import
    shop_tools``: a file in the program's folder, not an installed package)."""
    import os

    module = program.module
    folder = os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or ""))
    out = [module]
    for value in vars(module).values():
        file = getattr(value, "__file__", None) if isinstance(value, types.ModuleType) else None
        if file and os.path.dirname(os.path.abspath(file)) == folder and value not in out:
            out.append(value)
    return out


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


def _one_positional(fn: Any) -> bool:
    """``fn`` takes exactly one argument given by position (``def get_weather(tool_input)``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return len(positional) >= 1 and len(required) <= 1 and (not required or required[0] is positional[0])


def _takes_one(fn: Any) -> str | None:
    """Why ``fn(arguments)`` — the input dict as its one argument — would fail (None when it takes it)."""
    try:
        inspect.signature(fn).bind({})
    except (TypeError, ValueError) as e:
        return f"cannot take one argument ({e})"
    return None


@dataclass
class CallStyle:
    """How the program's loop calls a tool's function, read from its call sites."""

    kind: Literal["dict", "kwargs"] | None = None
    """``dict``: ``fn(block.input)``; ``kwargs``: ``fn(**block.input)``; None: no call site tells (or two
    disagree)."""
    at: list[str] = field(default_factory=list)
    """``file:line`` of the call sites that told."""


def call_style(fn: Any, tool: str, program: Program) -> CallStyle:
    """How the program calls ``fn`` (the function of tool ``tool``): through a dispatch dict holding it
    (``D[name](...)``, ``D.get(name)(...)``, a variable assigned one of those), or by one of its names —
    in the program's module and in the module defining ``fn`` (tools kept in a module of their own)."""
    modules = [*_program_modules(program), sys.modules.get(getattr(fn, "__module__", "") or "")]
    found = [m for i, m in enumerate(modules) if m is not None and m not in modules[:i]]
    # the names holding fn, or a dict mapping the tool's name to it, in any of these modules
    direct = {k for m in found for k, v in vars(m).items() if v is fn}
    tables = {k for m in found for k, v in vars(m).items() if isinstance(v, Mapping) and _get(v, tool) is fn}
    seen: dict[str, set[str]] = {"dict": set(), "kwargs": set()}
    for module in found:
        parsed = module_tree(module)
        if parsed is None:
            continue
        tree, _, file = parsed
        for kind, at in _CallSites(tree, file, direct, set(tables), tool).styles():
            seen[kind].add(at)
    kinds = [k for k in ("dict", "kwargs") if seen[k]]
    if kinds == ["dict"]:
        return CallStyle("dict", sorted(seen["dict"]))
    if kinds == ["kwargs"]:
        return CallStyle("kwargs", sorted(seen["kwargs"]))
    return CallStyle()


class _CallSites:
    """The calls of one function in one module's source, and what each is given."""

    def __init__(self, tree: ast.Module, file: str, direct: set[str], tables: set[str], tool: str) -> None:
        self.tree, self.file, self.tool = tree, file, tool
        self.owner = enclosing(tree)
        self.direct = direct
        """Module-level names holding the function (its own, an import of it)."""
        self.tables = tables
        """Names of dicts mapping the tool's name to it (module-level, or assigned a dict written here)."""
        self.literals = {  # dicts written in the source that map the tool's name to fn
            id(n)
            for n in ast.walk(tree)
            if isinstance(n, ast.Dict)
            and any(
                isinstance(k, ast.Constant)
                and k.value == tool
                and isinstance(v, ast.Name)
                and v.id in self.direct
                for k, v in zip(n.keys, n.values, strict=True)
            )
        }
        for n in ast.walk(tree):  # `handlers = {"calculator": calculator}` inside a function
            if isinstance(n, ast.Assign) and id(n.value) in self.literals:
                self.tables |= {t.id for t in n.targets if isinstance(t, ast.Name)}

    def styles(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            scope = self.owner.get(node)
            func, args, keywords = _through_worker(node)
            if not self._calls_fn(func, scope):
                continue
            at = f"{self.file}:{node.lineno}"
            if len(args) == 1 and not keywords and not isinstance(args[0], ast.Starred):
                if isinstance(args[0], ast.Dict) or self._is_input(args[0], scope, 0):
                    out.append(("dict", at))
            elif not args and len(keywords) == 1 and keywords[0].arg is None:
                out.append(("kwargs", at))
        return out

    def _lookup(self, node: ast.AST) -> bool:
        """``D[...]`` / ``D.get(...)`` with ``D`` a table holding fn (a name, ``self.D``, or a dict written
        there), or ``globals()[...]`` for a module function."""
        table: ast.AST | None = None
        if isinstance(node, ast.Subscript):
            table = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            table = node.func.value
        if table is None:
            return False
        if isinstance(table, ast.Call) and isinstance(table.func, ast.Name) and table.func.id == "globals":
            return self.tool in self.direct
        name = (
            table.id
            if isinstance(table, ast.Name)
            else table.attr
            if isinstance(table, ast.Attribute)
            else None
        )
        return (name is not None and name in self.tables) or id(table) in self.literals

    def _calls_fn(self, func: ast.AST, scope: ast.AST | None) -> bool:
        if self._lookup(func):
            return True
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in self.direct:
            return True  # shop_tools.get_weather(...)
        if isinstance(func, ast.Name):
            if func.id in self.direct and not (scope is not None and assignments(scope, func.id)):
                return True
            values = assignments(scope, func.id) if scope is not None else []
            return bool(values) and all(self._lookup(v) for v in values)  # fn = D.get(name)
        return False

    def _is_input(self, expr: ast.AST, scope: ast.AST | None, depth: int) -> bool:
        """``expr`` is the tool_use block's ``input`` (``block.input``, ``block["input"]``), directly, through
        a variable assigned it, or through a parameter every caller of the function passes it to."""
        if depth > 3:
            return False
        if isinstance(expr, ast.Attribute):
            return expr.attr == "input"
        if isinstance(expr, ast.Subscript):
            return isinstance(expr.slice, ast.Constant) and expr.slice.value == "input"
        if not isinstance(expr, ast.Name) or scope is None:
            return False
        values = assignments(scope, expr.id)
        if values:
            return all(self._is_input(v, scope, depth + 1) for v in values)
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        params = [a.arg for a in (*scope.args.posonlyargs, *scope.args.args)]
        if expr.id not in params:
            return False
        index = params.index(expr.id) - (1 if params and params[0] in ("self", "cls") else 0)
        given: list[tuple[ast.AST, ast.AST | None]] = []
        for node in ast.walk(self.tree):  # the calls of the function holding this one: what they pass
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if callee != scope.name:
                continue
            kw = next((k.value for k in node.keywords if k.arg == expr.id), None)
            if kw is not None:
                given.append((kw, self.owner.get(node)))
            elif 0 <= index < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args):
                given.append((node.args[index], self.owner.get(node)))
            else:
                return False
        return bool(given) and all(self._is_input(v, s, depth + 1) for v, s in given)


_WORKERS = {"to_thread": 0, "submit": 0, "run_in_executor": 1}
"""``asyncio.to_thread(fn, *args)``, ``executor.submit(fn, *args)``, ``loop.run_in_executor(pool, fn,
*args)``: a call of ``fn`` made in a worker (the position of ``fn`` among the arguments)."""


def _through_worker(node: ast.Call) -> tuple[ast.AST, list[ast.expr], list[ast.keyword]]:
    """(what is called, its positional arguments, its keywords) — through a worker-thread call."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    index = _WORKERS.get(name)
    if index is not None and len(node.args) > index and not node.keywords:
        return node.args[index], node.args[index + 1 :], []
    return node.func, list(node.args), list(node.keywords)


def _get(table: Mapping[Any, Any], key: str) -> Any:
    try:
        return table.get(key)
    except Exception:  # a mapping of the program's that fails when looked at
        return None
