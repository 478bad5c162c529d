"""Reading the code of a LangGraph node the program wrote (or of a ``prompt=`` function it gave
``create_react_agent``): which chat model it calls and which system prompt it puts in front of the
messages, without running it.

A node is whatever ``add_node`` was given: a function, a bound method (``add_node("agent",
assistant.call_model)``), an object whose class defines ``__call__`` (``add_node("agent", Agent())``), a
``functools.partial`` of one of those, or a runnable (``prompt | model``). ``node_code`` turns each into
the function whose code runs and the object it is a method of; the names that code uses are looked up in
its module's globals, its closure and — for a method — the object's attributes (``self.llm``) and its
class's. A method or module function the code calls is read too (two calls down) when the node's own code
names no chat model.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from dataclasses import dataclass
from typing import Any

from portagent.migration.importing import placeholder_instructions, where
from portagent.migration.report import ImportReport


@dataclass(frozen=True)
class NodeCode:
    """What runs when a node runs."""

    func: Any
    """The Python function whose code runs (a method's function, a callable object's ``__call__``); None
    for a runnable without Python code of the program's (a ``prompt | model`` chain)."""
    owner: Any = None
    """The object ``func`` is a method of (``self``), or None."""
    runnable: Any = None
    """The runnable the node was given when it is not Python code (a chain), else None."""
    given: tuple[tuple[str, Any], ...] = ()
    """The arguments a ``functools.partial`` fixed, by parameter name (``partial(agent_node, llm=llm)``)."""

    def where(self) -> str:
        """``file:line`` of the node's code (its method's, for an object)."""
        if self.func is not None:
            return where(self.func)
        return f"a {type(self.runnable).__name__}"

    @property
    def label(self) -> str:
        """The node's code as the report names it: ``Agent.__call__``, ``chatbot``."""
        if self.func is None:
            return type(self.runnable).__name__
        return str(getattr(self.func, "__qualname__", "?"))


def node_code(runnable: Any) -> NodeCode | None:
    """The code a graph node (``graph.nodes[name].bound``) runs; None for nothing of the program's."""
    from langchain_core.runnables import Runnable

    fn = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
    if fn is None:
        return NodeCode(None, None, runnable) if isinstance(runnable, Runnable) else None
    return callable_code(fn)


def callable_code(fn: Any) -> NodeCode:
    """A callable the program wrote → the function whose code runs, its ``self``, and the arguments a
    ``functools.partial`` fixed."""
    given: dict[str, Any] = {}
    for _ in range(4):  # partial(partial(f, a), b)
        if not isinstance(fn, functools.partial):
            break
        given = {**_partial_arguments(fn), **given}
        fn = fn.func
    fixed = tuple(given.items())
    if inspect.ismethod(fn):
        return NodeCode(fn.__func__, fn.__self__, given=fixed)
    if inspect.isfunction(fn) or inspect.isbuiltin(fn):
        return NodeCode(fn, given=fixed)
    call = inspect.getattr_static(type(fn), "__call__", None)
    if inspect.isfunction(call) and not isinstance(fn, type):  # an object of a class defining __call__
        return NodeCode(call, fn, given=fixed)
    return NodeCode(fn, given=fixed)


def _partial_arguments(p: functools.partial[Any]) -> dict[str, Any]:
    """What a ``functools.partial`` fixed, by the parameter names of the function it wraps."""
    out = dict(p.keywords)
    try:
        params = list(inspect.signature(p.func).parameters)
    except (TypeError, ValueError):
        return out
    out.update(zip(params, p.args, strict=False))
    return out


def _attributes(owner: Any) -> dict[str, Any]:
    """An object's attributes as its methods name them (``self.x``): the class's data attributes, then the
    object's own, read without running a property or ``__getattr__`` of the program's."""
    out: dict[str, Any] = {}
    for cls in reversed(type(owner).__mro__):
        if cls is object:
            continue
        for k, v in vars(cls).items():
            if not k.startswith("__") and not isinstance(v, property):
                out[k] = v
    with contextlib.suppress(TypeError):
        out.update(vars(owner))
    return out


def _scope(func: Any, owner: Any, given: tuple[tuple[str, Any], ...] = ()) -> dict[str, Any]:
    """The names ``func``'s code can reach: its module's globals, its closure, (a method) its object's
    attributes, which ``self.x`` reads, and the parameters a ``functools.partial`` fixed."""
    target = inspect.unwrap(func)
    scope = dict(getattr(target, "__globals__", {}))
    with contextlib.suppress(TypeError, ValueError):
        scope.update(inspect.getclosurevars(target).nonlocals)
    if owner is not None:
        scope.update(_attributes(owner))
    scope.update(given)
    return scope


def code_names(code: types.CodeType) -> set[str]:
    """The global and free names a function's code (and the code nested in it) refers to."""
    names: set[str] = set()
    codes = [code]
    while codes:
        c = codes.pop()
        names |= set(c.co_names) | set(c.co_freevars)
        codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return names


def _reached(node: NodeCode, depth: int) -> list[tuple[str, Any]]:
    """(name, value) for each name the node's code uses — and, ``depth`` calls down, the code of the
    methods of its object and the functions of its module it names."""
    todo: list[tuple[Any, Any, int, tuple[tuple[str, Any], ...]]] = [(node.func, node.owner, 0, node.given)]
    seen: set[int] = set()
    out: list[tuple[str, Any]] = []
    while todo:
        func, owner, level, given = todo.pop(0)
        code = getattr(inspect.unwrap(func), "__code__", None) if func is not None else None
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        scope = _scope(func, owner, given)
        for n in sorted(code_names(code) | {k for k, _ in given}):  # (a partial's fixed parameters too)
            if n not in scope:
                continue
            value = scope[n]
            out.append((n, value))
            if level >= depth:
                continue
            if owner is not None and inspect.isfunction(value) and n in _class_functions(owner):
                todo.append((value, owner, level + 1, ()))  # self.helper(...): a method of the same object
            elif inspect.isfunction(value) and value.__module__ == getattr(func, "__module__", None):
                todo.append((value, None, level + 1, ()))  # a function of the node's own module
            elif inspect.ismethod(value):
                todo.append((value.__func__, value.__self__, level + 1, ()))
    return out


def _class_functions(owner: Any) -> set[str]:
    return {k for cls in type(owner).__mro__ for k, v in vars(cls).items() if inspect.isfunction(v)}


def chat_models_used(node: NodeCode | None) -> list[tuple[str, Any]]:
    """(name, model) for each chat model (or chat model bound to tools) the node's code names, one per
    distinct chat model: its own code first; when that names none, the methods and functions it calls
    (two calls down)."""
    from langchain_core.language_models import BaseChatModel

    if node is None:
        return []
    attempts: list[list[tuple[str, Any]]] = (
        [[("", node.runnable)]] if node.func is None else [_reached(node, 0), _reached(node, 2)]
    )
    for candidates in attempts:
        steps = [(n, v) for n, value in candidates for v in _steps(value)]
        found: dict[int, tuple[str, Any]] = {}
        for n, value in sorted(steps, key=lambda c: not hasattr(c[1], "bound")):  # bound models first
            chat = getattr(value, "bound", value)
            if isinstance(chat, BaseChatModel) and id(chat) not in found:
                found[id(chat)] = (n, value)
        if found:
            return list(found.values())
    return []


def _steps(value: Any) -> list[Any]:
    """A runnable the node names, and, for a chain (``prompt | model``), each of its steps."""
    from langchain_core.runnables import RunnableSequence

    if isinstance(value, RunnableSequence):
        return [value, *value.steps]
    return [value]


def _chain_prompts(node: NodeCode) -> list[Any]:
    """The ``ChatPromptTemplate`` steps of the chains (``prompt | model``) a node's code names."""
    from langchain_core.prompts import ChatPromptTemplate

    values = [node.runnable] if node.func is None else [v for _, v in _reached(node, 0)]
    out: list[Any] = []
    for value in values:
        steps = _steps(value)
        if len(steps) > 1:
            out.extend(s for s in steps if isinstance(s, ChatPromptTemplate))
    return list({id(t): t for t in out}.values())


def template_system_text(template: Any) -> str | None:
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


def _system_texts(node: NodeCode) -> list[str] | None:
    """The texts of the system messages the node's code writes (``""`` for one whose text is computed at
    run time); None when its source cannot be read."""
    import ast
    import sys
    import textwrap

    from portagent.migration.static_read import Reader, Unreadable

    func = node.func
    module = sys.modules.get(getattr(func, "__module__", "") or "")
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (TypeError, OSError, SyntaxError):
        return None
    if module is None:
        return None
    reader = Reader(module, source, node.where().rpartition(":")[0], ast.parse(""))
    texts: list[str] = []
    for n in ast.walk(tree):
        expr: ast.AST | None = None
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "SystemMessage":
            expr = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "content"), None)
        elif isinstance(n, ast.Tuple) and len(n.elts) == 2 and isinstance(n.elts[0], ast.Constant):
            expr = n.elts[1] if n.elts[0].value == "system" else None
        elif isinstance(n, ast.Dict):
            pairs = {k.value: v for k, v in zip(n.keys, n.values, strict=True) if isinstance(k, ast.Constant)}
            role = pairs.get("role")
            if isinstance(role, ast.Constant) and role.value == "system":
                expr = pairs.get("content")
        if expr is None:
            continue
        value: Any = None
        if (
            node.owner is not None
            and isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "self"
        ):
            value = _attributes(node.owner).get(expr.attr)  # self.system: the object's attribute
        elif isinstance(expr, ast.Name) and expr.id in dict(node.given):
            value = dict(node.given)[expr.id]  # a parameter a functools.partial fixed
        else:
            try:
                value = reader.value(expr, None)
            except Unreadable:
                value = None
        texts.append(value if isinstance(value, str) else "")
    return texts


def node_prompt(node: NodeCode, subject: str, name: str, report: ImportReport, *, title: str = "") -> str:
    """The system prompt a node (or a ``prompt=`` function) puts in front of the messages:
    ``SystemMessage(TEXT)`` / ``SystemMessage(content=TEXT)`` / ``{"role": "system", "content": TEXT}`` /
    ``("system", TEXT)`` with TEXT a constant, a module-level string or an attribute of the node's object
    (``self.system``), or a ``ChatPromptTemplate`` without variables it runs before its model; else a
    placeholder, reported with the code's ``file:line``. ``subject``: ``node 'agent'``, ``the prompt=
    function prompt``; ``title``: how the report's line names it (``subject`` when not given)."""
    texts = _system_texts(node) if node.func is not None else []
    texts = texts or []
    if len(texts) == 1 and texts[0].strip():
        report.add(
            "changed",
            f"system prompt of agent {name}",
            f"read from the system message {subject} puts in front of the messages ({node.where()})",
        )
        return texts[0]
    templates = _chain_prompts(node) if not texts else []
    if len(templates) == 1:
        text = template_system_text(templates[0])
        if text and text.strip():
            report.add(
                "changed",
                f"system prompt of agent {name}",
                f"read from the ChatPromptTemplate {subject} runs before its model ({node.where()}); the "
                "template's other messages (the conversation placeholder) are the run's own",
            )
            return text
        texts = [""]  # a template with variables: computed at run time
    report.add(
        "not_portable",
        f"prompt of agent {name} ({title or subject}, {node.where()})",
        "not read: "
        + (
            f"{subject} builds no system message the import can read (a constant text)"
            if not texts
            else f"{subject} builds its system message at run time, or more than one"
        )
        + "; a placeholder was written for instructions",
    )
    return placeholder_instructions(name, "the LangGraph agent's prompt could not be read")
