"""Reading what a program passes to a call without running the call: the arguments of
``client.messages.create(...)`` inside a function, the prompt a LangGraph node puts in front of its model.

The program's module has been imported (its top level ran), so a name the module defines is read as the
object it holds; a name the enclosing function assigns once is read from that assignment; a helper
function of the module that only returns an expression is read through; ``os.environ.get(K, DEFAULT)`` /
``os.getenv(K, DEFAULT)`` reads as its default (the caller reports it). Anything else — a parameter, a
value computed at run time, a comprehension, a call — is ``Unreadable``, carrying the expression's source
and ``file:line`` for the import report.
"""

from __future__ import annotations

import ast
import inspect
import os
import types
from dataclasses import dataclass, field
from typing import Any


class Unreadable(Exception):
    def __init__(self, source: str, at: str, why: str = "computed at run time") -> None:
        super().__init__(f"{source} ({at}): {why}")
        self.source, self.at, self.why = source, at, why


@dataclass
class Env:
    """An expression read from the environment: ``name`` and the default the program falls back to."""

    name: str
    default: Any
    at: str
    kind: str = "environment variable"
    """``environment variable``, or ``parameter`` (a function parameter's default)."""


def module_tree(module: types.ModuleType) -> tuple[ast.Module, str, str] | None:
    """(parsed source, its text, the file's path as the report shows it) of a module, None without source."""
    try:
        file = inspect.getsourcefile(module)
        text = inspect.getsource(module)
    except (TypeError, OSError):
        return None
    if not file:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    rel = os.path.relpath(file)
    return tree, text, rel if not rel.startswith("..") else file


def enclosing(tree: ast.Module) -> dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]:
    """Each node → the innermost function holding it (None at the module's top level)."""
    out: dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None] = {}

    def visit(node: ast.AST, fn: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        out[node] = fn
        inner = node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else fn
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, None)
    return out


def qualnames(tree: ast.Module) -> dict[ast.AST, str]:
    """Each function or class definition → its qualified name (``Desk.run``)."""
    out: dict[ast.AST, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                out[child] = name
                sep = ".<locals>." if not isinstance(child, ast.ClassDef) else "."
                visit(child, name + sep)
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


@dataclass
class Reader:
    module: types.ModuleType
    text: str
    file: str
    tree: ast.Module
    envs: list[Env] = field(default_factory=list)
    _outer: dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None] | None = None

    def at(self, node: ast.AST) -> str:
        return f"{self.file}:{getattr(node, 'lineno', 0)}"

    def source(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.text, node) or ast.dump(node)[:80]
        text = " ".join(text.split())
        return text if len(text) <= 100 else text[:97] + "..."

    def fail(self, node: ast.AST, why: str = "computed at run time") -> Unreadable:
        return Unreadable(self.source(node), self.at(node), why)

    def value(self, node: ast.AST, scope: ast.AST | None, depth: int = 0) -> Any:
        """What ``node`` evaluates to in ``scope`` (a function node, or None for the module), or ``Unreadable``."""
        try:
            return self._value(node, scope, depth)
        except Unreadable:
            raise
        except Exception as e:  # an object of the program's that fails when looked at: not readable
            raise self.fail(node, f"reading it failed ({type(e).__name__})") from None

    def _value(self, node: ast.AST, scope: ast.AST | None, depth: int) -> Any:
        if depth > 12:
            raise self.fail(node, "too deep to follow")

        def go(n: ast.AST) -> Any:
            return self.value(n, scope, depth + 1)

        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node, scope, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self._self_attribute(node, scope, depth)
        if isinstance(node, ast.Attribute):
            base = go(node.value)
            if not isinstance(base, types.ModuleType | type) and not _plain_object(base):
                raise self.fail(node)
            try:
                return getattr(base, node.attr)
            except Exception:
                raise self.fail(node, f"{node.attr!r} not found") from None
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items: list[Any] = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    items.extend(_iterable(go(elt.value), self, elt))
                else:
                    items.append(go(elt))
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    merged = go(v)
                    if not isinstance(merged, dict):
                        raise self.fail(v, "not a dict")
                    out.update(merged)
                else:
                    out[go(k)] = go(v)
            return out
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.format_spec is None and v.conversion == -1:
                    parts.append(str(go(v.value)))
                else:
                    raise self.fail(node)
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = go(node.left), go(node.right)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, list | tuple) and isinstance(right, list | tuple):
                return [*left, *right]
            raise self.fail(node)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            for operand in node.values:  # `tools or DEFAULT_TOOLS`: the first value that is set
                value = go(operand)
                if value:
                    return value
            return value
        if isinstance(node, ast.Subscript):
            base = go(node.value)
            key = go(node.slice)
            try:
                if isinstance(base, dict) and isinstance(key, str | int):
                    return base[key]
                if isinstance(base, list | tuple) and isinstance(key, int):
                    return base[key]
            except (KeyError, IndexError):
                raise self.fail(node, "not found") from None
            raise self.fail(node)
        if isinstance(node, ast.Call):
            return self._call(node, scope, depth)
        if isinstance(node, ast.Await):
            raise self.fail(node)
        raise self.fail(node)

    def items(self, node: ast.AST, scope: ast.AST | None) -> tuple[list[Any], list[Unreadable]] | None:
        """A list written out (``[a, b, *more]``, or a name assigned one once): each element read on its
        own, (the elements read, what could not be read); None when ``node`` is no such list."""
        target: ast.AST | None = node
        where_scope = scope
        for _ in range(4):
            if isinstance(target, ast.Name):
                local = assignments(where_scope, target.id) if where_scope is not None else []
                top = assignments(self.tree, target.id)
                if len(local) == 1:
                    target = local[0]
                elif not local and len(top) == 1:
                    target, where_scope = top[0], self.tree
                else:
                    return None
            elif isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and not target.args:
                helper = _returns_only(self.tree, target.func.id)
                if helper is None:
                    return None
                where_scope, target = helper
            else:
                break
        if not isinstance(target, ast.List | ast.Tuple):
            return None
        found: list[Any] = []
        failed: list[Unreadable] = []
        for elt in target.elts:
            try:
                if isinstance(elt, ast.Starred):
                    found.extend(_iterable(self.value(elt.value, where_scope), self, elt))
                else:
                    found.append(self.value(elt, where_scope))
            except Unreadable as u:
                whole = self.source(elt)
                failed.append(
                    Unreadable(whole, self.at(elt), u.why if u.source == whole else f"{u.source}: {u.why}")
                )
        return found, failed

    def _self_attribute(self, node: ast.Attribute, scope: ast.AST | None, depth: int) -> Any:
        """``self.x`` in a method: the one ``self.x = ...`` the class's methods assign (read in that
        method, its parameters' defaults standing for the caller's values), or the class attribute."""
        cls = next(
            (
                c
                for c in ast.walk(self.tree)
                if isinstance(c, ast.ClassDef) and scope is not None and scope in c.body
            ),
            None,
        )
        if cls is None:
            raise self.fail(node, "self outside a class's method")
        found: list[tuple[ast.AST, ast.expr]] = []
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for n in ast.walk(method):
                targets = (
                    n.targets
                    if isinstance(n, ast.Assign)
                    else [n.target]
                    if isinstance(n, ast.AnnAssign)
                    else []
                )
                value = getattr(n, "value", None)
                for t in targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and t.attr == node.attr
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                        and value is not None
                    ):
                        found.append((method, value))
        if len(found) == 1:
            return self.value(found[0][1], found[0][0], depth + 1)
        if found:
            raise self.fail(node, f"assigned {len(found)} times in the class")
        at_class = assignments(cls, node.attr)
        if len(at_class) == 1:
            return self.value(at_class[0], None, depth + 1)
        raise self.fail(node, "an attribute the class never assigns")

    def _name(self, node: ast.Name, scope: ast.AST | None, depth: int) -> Any:
        if scope is not None:
            args = scope.args if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else None
            params = (
                {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
                | ({args.vararg.arg} if args.vararg else set())
                | ({args.kwarg.arg} if args.kwarg else set())
                if args is not None
                else set()
            )
            if node.id in params:
                assert isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef)
                default = _param_default(scope, node.id)
                if default is None:
                    raise self.fail(node, "a parameter of the function: its value comes from the caller")
                value = self.value(default, None, depth + 1)
                if value is not None:  # (None: the function's own fallback follows, `tools or TOOLS`)
                    self.envs.append(Env(node.id, value, self.at(default), kind="parameter"))
                return value
            assigned = assignments(scope, node.id)
            if len(assigned) == 1:
                return self.value(assigned[0], scope, depth + 1)
            if assigned:
                raise self.fail(node, f"assigned {len(assigned)} times in the function")
            if self._outer is None:
                self._outer = enclosing(self.tree)
            outer = self._outer.get(scope)
            if outer is not None:  # a nested function: the name may be the enclosing function's
                return self._name(node, outer, depth + 1)
        if hasattr(self.module, node.id):
            value = getattr(self.module, node.id)
            top = assignments(self.tree, node.id)
            if len(top) == 1 and isinstance(top[0], ast.Call) and _dotted(top[0].func) in _ENV_READS:
                self.envs.append(Env(_env_name(top[0]), value, self.at(top[0])))
            return value
        import builtins

        if hasattr(builtins, node.id) and node.id in ("True", "False", "None", "dict", "list"):
            return getattr(builtins, node.id)
        top = assignments(self.tree, node.id)  # assigned at the top level where importing does not run it
        if len(top) == 1 and scope is not self.tree:  # (inside `if __name__ == "__main__":`)
            return self.value(top[0], self.tree, depth + 1)
        raise self.fail(node, "not defined at the module's top level")

    def _call(self, node: ast.Call, scope: ast.AST | None, depth: int) -> Any:
        def go(n: ast.AST) -> Any:
            return self.value(n, scope, depth + 1)

        func = node.func
        dotted = _dotted(func)
        if dotted in _ENV_READS and node.args:
            name = go(node.args[0])
            default_node = node.args[1] if len(node.args) > 1 else None
            default_node = default_node or next((k.value for k in node.keywords if k.arg == "default"), None)
            if default_node is None:
                raise self.fail(node, f"read from the environment variable {name!r}, with no default")
            default = go(default_node)
            self.envs.append(Env(str(name), default, self.at(node)))
            return default
        if dotted in ("dict", "list", "tuple"):
            if dotted == "dict":
                out: dict[str, Any] = {}
                for a in node.args:
                    base = go(a)
                    if not isinstance(base, dict):
                        raise self.fail(a, "not a dict")
                    out.update(base)
                for k in node.keywords:
                    if k.arg is None:
                        more = go(k.value)
                        if not isinstance(more, dict):
                            raise self.fail(k.value, "not a dict")
                        out.update(more)
                    else:
                        out[k.arg] = go(k.value)
                return out
            if len(node.args) == 1 and not node.keywords:
                seq = _iterable(go(node.args[0]), self, node.args[0])
                return list(seq) if dotted == "list" else tuple(seq)
            raise self.fail(node)
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("model_json_schema", "schema")
            and not node.args
            and not node.keywords
        ):
            model = go(func.value)  # a pydantic model's JSON schema: pydantic computes it, no program code
            if isinstance(model, type) and hasattr(model, "model_json_schema"):
                return model.model_json_schema()
            raise self.fail(node, "not a pydantic model's schema")
        if isinstance(func, ast.Name | ast.Attribute) and len(node.args) <= 1:
            try:
                cls = go(func)
            except Unreadable:
                cls = None
            if isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__required_keys__"):
                typed: dict[str, Any] = dict(go(node.args[0])) if node.args else {}  # a TypedDict
                for k in node.keywords:
                    if k.arg is None:
                        typed.update(go(k.value))
                    else:
                        typed[k.arg] = go(k.value)
                return typed
        if isinstance(func, ast.Name) and not node.args and not node.keywords:
            helper = _returns_only(self.tree, func.id)
            if helper is not None:
                fn_node, expr = helper
                return self.value(expr, fn_node, depth + 1)
        raise self.fail(node, "a call, made at run time")


_ENV_READS = frozenset({"os.environ.get", "os.getenv", "environ.get", "getenv"})


def _env_name(call: ast.Call) -> str:
    first = call.args[0] if call.args else None
    return str(first.value) if isinstance(first, ast.Constant) else "?"


def assignments(scope: ast.AST, name: str) -> list[ast.expr]:
    """The values assigned to ``name`` in ``scope`` itself (not in functions it defines)."""
    out: list[ast.expr] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            out.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            if node.value is not None:
                out.append(node.value)
        elif isinstance(node, ast.AugAssign | ast.For | ast.With | ast.AsyncWith | ast.NamedExpr):
            targets = [getattr(node, "target", None)] + [i.optional_vars for i in getattr(node, "items", [])]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets if t is not None):
                out.append(ast.Name(id="<rebound>"))  # a second binding: not one value
        todo.extend(ast.iter_child_nodes(node))
    return out


def _param_default(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.expr | None:
    """The default of ``fn``'s parameter ``name`` (None without one)."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    for arg, default in zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True):
        if arg.arg == name:
            return default
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if arg.arg == name:
            return kw_default
    return None


def _returns_only(tree: ast.Module, name: str) -> tuple[ast.AST, ast.expr] | None:
    """A top-level ``def name():`` whose body (besides a docstring and assignments) is one ``return X``."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name and not node.args.args:
            body = [
                n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            ]
            returns = [n for n in body if isinstance(n, ast.Return)]
            if (
                len(returns) == 1
                and body[-1] is returns[0]
                and returns[0].value is not None
                and all(isinstance(n, ast.Assign | ast.AnnAssign | ast.Return) for n in body)
            ):
                return node, returns[0].value
    return None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _plain_object(obj: Any) -> bool:
    """An object whose attributes may be read without running code of the program's (no properties)."""
    return isinstance(obj, str | int | float | bool | dict | list | tuple) or type(obj).__module__ == "enum"


def _iterable(value: Any, reader: Reader, node: ast.AST) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    raise reader.fail(node, "not a list")


def call_chain(node: ast.Call) -> list[str]:
    """``client.beta.messages.tool_runner(...)`` → ``["client", "beta", "messages", "tool_runner"]``
    (``self.client`` and other non-name bases read as ``?``)."""
    parts = []
    func: ast.AST = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    parts.append(func.id if isinstance(func, ast.Name) else "?")
    return list(reversed(parts))
