"""``portagent import``: from a native agent object to an ``ImportDraft`` (then ``writer`` writes it).

Shared by the three importers: finding the object, naming, pointing a handler at the original Python
function (``module:function``), and deciding whether a tool's schema can be used.

A handler string must resolve, at run time, to the very function the native definition wrapped:

- a plain module-level function → ``module:qualname``;
- a function the SDK's decorator replaced at module level (openai-agents ``@function_tool`` leaves a
  ``FunctionTool`` under the function's name) → ``module:name.__wrapped__``, through the SDK's own
  accessor for the wrapped callable;
- a function whose calling convention differs from portagent's (``handler(**args)``; ADR 0004) — it
  takes the SDK's context object, a parameter named ``context``, or (Claude SDK MCP tools) one ``args``
  dict and returns MCP content → a small shim in the generated shim module calls the original, unchanged.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import keyword
import re
import sys
from collections.abc import Iterable
from typing import Any

from portagent.contracts.errors import MissingExtraError, PortagentError, UsageError
from portagent.contracts.schema_faults import schema_problem
from portagent.migration.draft import DraftAgent, DraftTool, ImportDraft, PolicyRuleDraft
from portagent.migration.report import ImportReport
from portagent.migration.shims import placeholder_keys

SDKS: dict[str, tuple[str, str, str]] = {
    "openai": ("agents", "openai-agents", "openai"),
    "adk": ("google.adk", "google-adk", "adk"),
    "claude": ("claude_agent_sdk", "claude-agent-sdk", "claude"),
    "anthropic": ("anthropic", "anthropic", "anthropic"),
    "langgraph": ("langgraph.prebuilt", "langgraph", "langgraph"),
}
"""``--from`` value → (top module, distribution, portagent extra)."""

_TYPE_HINTS = {
    "agents": "openai",
    "google.adk": "adk",
    "claude_agent_sdk": "claude",
    "anthropic": "anthropic",
    "langgraph": "langgraph",
}


def is_file_target(ref: str) -> bool:
    """``prog.py``, ``src/prog.py:AGENT``: a program file where a module name usually goes."""
    module = ref.partition(":")[0]
    return module.endswith(".py") or "/" in module or "\\" in module


def file_module(ref: str) -> str:
    """``path/prog.py[:OBJECT]`` → ``prog[:OBJECT]``, its folder first on ``sys.path`` (as ``python
    path/prog.py`` runs it). Refused, with one message: no such file, a folder, not a ``.py`` file, a
    name no module can have."""
    from pathlib import Path

    given, sep, attr = ref.partition(":")
    path = Path(given)
    if not path.exists():
        raise UsageError(f"{given}: no such file")
    if path.is_dir():
        raise UsageError(f"{given}: is a folder; give the program's .py file (or MODULE:OBJECT)")
    if path.suffix != ".py":
        raise UsageError(f"{given}: not a Python file (.py); give the program's .py file (or MODULE:OBJECT)")
    if not re.fullmatch(r"[A-Za-z_]\w*", path.stem) or keyword.iskeyword(path.stem):
        raise UsageError(
            f"{given}: MODULE is a Python module name, and {path.name} cannot be imported as one; "
            f"rename it (letters, digits and _) and import it again"
        )
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.find_spec(path.stem)
    except (ImportError, ValueError):
        spec = None
    found = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    if found != path.resolve():
        raise UsageError(
            f"{given}: its module name {path.stem!r} is also {found or 'another module'}'s, which Python "
            "would import instead (and the written handlers too); rename the file"
        )
    return path.stem + sep + attr


def load_target(ref: str) -> tuple[str, Any]:
    """``MODULE:OBJECT``, ``MODULE`` or ``path/prog.py[:OBJECT]`` → (``module[:OBJECT]``, the object);
    without ``:OBJECT`` the object is the module, in which the reader looks for the agent."""
    if is_file_target(ref):
        ref = file_module(ref)
    if ":" not in ref:
        if not ref or not all(p.isidentifier() for p in ref.split(".")):
            raise UsageError(
                f"{ref!r}: expected MODULE:OBJECT, a module or a .py file, e.g. shop_agents:desk"
            )
        return ref, _import_module(ref)
    return ref, load_object(ref)


def load_object(ref: str) -> Any:
    """``MODULE:OBJECT`` (``OBJECT`` may be dotted) → the object. Every failure is a ``UsageError``."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{ref!r}: expected MODULE:OBJECT, e.g. shop_agents:desk")
    obj: Any = _import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _import_module(module_name: str) -> Any:
    """Import the program's module with a placeholder for each API key variable not set
    (``shims.placeholder_keys``): a client or chat model built at its top level needs one to be built, no
    request is made while importing, and no key is read into the spec."""
    try:
        with placeholder_keys():
            return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise UsageError(
            f"cannot import module {module_name!r}: {e} (run from the folder that holds it, or "
            "add that folder to PYTHONPATH)"
        ) from e
    except Exception as e:  # the module raised while importing
        raise UsageError(f"importing module {module_name!r} failed: {type(e).__name__}: {e}") from e
    except SystemExit as e:  # a script's top level (argparse, sys.exit) run on import
        raise UsageError(
            f"importing module {module_name!r} called sys.exit({e.code!r}): its top level runs a program; "
            'guard it with `if __name__ == "__main__":` so the agent can be imported'
        ) from None


def other_sdk_hint(obj: Any, sdk: str) -> str:
    """``"; it is an object of the X SDK: use --from X"`` when ``obj`` belongs to another SDK, a hint to
    import what a function builds when it is a function called without arguments (a factory), else
    ``""``."""
    if (inspect.isfunction(obj) or inspect.ismethod(obj)) and _no_required_params(obj):
        name = obj.__name__
        return (
            f"; {name} is a function, and the import reads the object it would build, not the code: "
            f"build it at the top level of the module (e.g. `agent = {name}()`) and import that name "
            f"({getattr(obj, '__module__', None) or 'MODULE'}:agent)"
        )
    module = type(obj).__module__ or ""
    for prefix, name in _TYPE_HINTS.items():
        if (module == prefix or module.startswith(prefix + ".")) and name != sdk:
            return f"; it is an object of the {name} SDK: use --from {name}"
    return ""


def _no_required_params(fn: Any) -> bool:
    """Callable with no arguments (a factory's shape; a tool function takes its arguments)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def a_type(obj: Any) -> str:
    """``"a builtins.dict"`` / ``"an anthropic.Anthropic"``: what an object is, for a refusal."""
    name = f"{type(obj).__module__}.{type(obj).__qualname__}"
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def wrong_type(ref: str, obj: Any, expected: str, sdk: str) -> UsageError:
    """The error for an object that is not what ``--from sdk`` reads, with a hint when it is another SDK's."""
    return UsageError(f"{ref} is {a_type(obj)}, not {expected} (--from {sdk}){other_sdk_hint(obj, sdk)}")


def require_sdk(sdk: str) -> None:
    module, package, extra = SDKS[sdk]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise MissingExtraError(sdk, package, extra)


def import_native(
    ref: str, sdk: str, *, models: dict[str, str] | None = None, name: str | None = None
) -> ImportDraft:
    """Read ``MODULE:OBJECT`` as a native ``sdk`` definition; ``name`` renames the root agent.

    A program file's folder goes first on ``sys.path`` while it is imported and read, and ``sys.path`` is
    as it was afterwards, refused or not: left there, an importing process (a notebook, a test, an MCP
    server) kept it in front of every later import and handed it to the processes it starts (the eval
    workers' fork server, a child given ``sys.path`` as ``PYTHONPATH``) — a folder holding a ``json.py``
    broke them all."""
    if sdk not in SDKS:
        raise UsageError(f"unknown SDK {sdk!r}; expected one of: {', '.join(SDKS)}")
    require_sdk(sdk)
    saved = sys.path[:]
    try:
        return _import_native(ref, sdk, models=models, name=name)
    finally:
        sys.path[:] = saved


def _import_native(ref: str, sdk: str, *, models: dict[str, str] | None, name: str | None) -> ImportDraft:
    ref, obj = load_target(ref)
    if ":" not in ref and sdk not in ("anthropic", "langgraph"):
        raise UsageError(
            f"{ref!r}: expected MODULE:OBJECT, e.g. shop_agents:desk (--from {sdk} reads the object you "
            "name; only --from anthropic and --from langgraph look for the agent in a module or file)"
        )
    try:
        draft = _read(sdk, ref, obj)
    except PortagentError:
        raise
    except Exception as e:  # a shape of program no reader here foresaw: one message, never a traceback
        raise UsageError(
            f"{ref}: the import could not read it ({type(e).__name__}: {e}); nothing was written"[:600]
        ) from None
    if name:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", name):
            raise UsageError(
                f"--name {name!r}: an agent name is an identifier (letters, digits, _; a letter first)"
            )
        if any(a.name == name for a in draft.agents() if a is not draft.root):
            raise UsageError(f"--name {name!r}: a sub-agent already has that name")
        draft.report.add("changed", f"root agent {draft.root.name!r}", f"renamed {name!r} (--name)")
        draft.root.name = name
    for provider, model in (models or {}).items():
        if draft.root.models.get(provider) not in (None, model):
            draft.report.add(
                "changed",
                f"models.{provider} of {draft.root.name}",
                f"replaced {draft.root.models[provider]!r} by {model!r} (--model)",
            )
        draft.root.models[provider] = model
    from portagent.contracts.providers import PROVIDERS

    missing = [p for p in PROVIDERS if not draft.root.models.get(p)]
    if missing:
        draft.report.add(
            "review",
            "model ids",
            "no model id for "
            + ", ".join(missing)
            + ": set models."
            + " / models.".join(missing)
            + " in agent.yaml (or pass --model PROVIDER=ID) before "
            "running there",
        )
    return draft


# --- names ---------------------------------------------------------------------------------------


class Names:
    """Unique, valid names: agents as identifiers (``^[A-Za-z][A-Za-z0-9_]{0,63}$``), tools as ToolSpec names."""

    def __init__(self, pattern: str = r"[^A-Za-z0-9_]") -> None:
        self._bad = re.compile(pattern)
        self.used: set[str] = set()

    def take(self, raw: str) -> str:
        name = self._bad.sub("_", raw.strip()) or "unnamed"
        if not name[0].isalpha():
            name = "a_" + name
        name = name[:60]
        candidate, n = name, 2
        while candidate in self.used:
            candidate, n = f"{name}_{n}", n + 1
        self.used.add(candidate)
        return candidate


def _read(sdk: str, ref: str, obj: Any) -> ImportDraft:
    """The draft ``sdk``'s reader makes of ``obj`` (found at ``ref``)."""
    if sdk == "openai":
        from portagent.migration.from_openai import read_openai

        return read_openai(ref, obj)
    if sdk == "adk":
        from portagent.migration.from_adk import read_adk

        return read_adk(ref, obj)
    if sdk == "anthropic":
        from portagent.migration.from_anthropic import read_anthropic

        return read_anthropic(ref, obj)
    if sdk == "langgraph":
        from portagent.migration.from_langgraph import read_langgraph

        return read_langgraph(ref, obj)
    from portagent.migration.from_claude import read_claude

    return read_claude(ref, obj)


def agent_names() -> Names:
    return Names(r"[^A-Za-z0-9_]")


def tool_names() -> Names:
    return Names(r"[^A-Za-z0-9_-]")


def py_identifier(name: str) -> str:
    out = re.sub(r"\W", "_", name)
    return out if out and not out[0].isdigit() else "_" + out


SHIM_MODULE_NAMES = frozenset(
    {
        "adk_context",
        "call_anthropic_tool",
        "call_langchain_tool",
        "call_mcp_handler",
        "call_original",
        "openai_context",
        "ToolContext",
    }
)
"""What a generated shim module imports for its functions (``writer._shim_text``): no shim may take these."""


def _short_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def shim_function(tool_name: str) -> str:
    """The name of a tool's function in the generated shim module: the tool name itself when it is a
    plain Python identifier, else its identifier form plus a digest of the real name. A ToolSpec name may
    be a Python keyword (``import``), differ from another only by ``-`` (``get-order`` / ``get_order``) or
    be a name the module imports (``call_original``): each still gets a function of its own, and a
    module that compiles."""
    if (
        tool_name.isidentifier()
        and not keyword.iskeyword(tool_name)
        and not keyword.issoftkeyword(tool_name)
        and not tool_name.startswith("_")
        and tool_name not in SHIM_MODULE_NAMES
    ):
        return tool_name
    return f"{py_identifier(tool_name).strip('_') or 'tool'}_{_short_digest(tool_name)}"


def source_alias(module: str) -> str:
    """The name a shim module imports an original module as: one per module (``shop.tools`` and
    ``shop_tools`` would both read ``_src_shop_tools``; a dotted name gets a digest of itself)."""
    alias = "_src_" + py_identifier(module)
    return alias if "." not in module else f"{alias}_{_short_digest(module)}"


# --- handlers ------------------------------------------------------------------------------------


def function_ref(fn: Any) -> str | None:
    """``module:qualname`` when importing it gives back this very function; None otherwise (a
    closure, a lambda, a function defined in ``__main__`` or replaced at module level)."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        return None
    obj: Any = sys.modules.get(module)
    if obj is None:
        try:
            obj = importlib.import_module(module)
        except Exception:
            return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return f"{module}:{qualname}" if obj is fn else None


def holder_ref(holder: Any, modules: Iterable[str]) -> str | None:
    """``module:attr`` of a module-level attribute that *is* ``holder`` (an SDK tool object), searching
    the given modules in order."""
    for name in dict.fromkeys(m for m in modules if m):
        module = sys.modules.get(name)
        if module is None or name == "__main__":
            continue
        for attr, value in vars(module).items():
            if value is holder and not attr.startswith("__"):
                return f"{name}:{attr}"
    return None


def source_module(ref: str) -> str:
    return ref.partition(":")[0]


UNIMPORTABLE = (
    "not imported: its function cannot be imported by name (a closure, a lambda or a function defined "
    "in __main__); move it to a module"
)
"""Why a tool whose function has no importable name is left out (every reader says it the same way)."""


def refuse_schema_gap(report: ImportReport, subject: str, gap: str) -> None:
    """A tool left out because its input schema needs what a ToolSpec cannot say (``schema_gap``)."""
    report.add(
        "not_portable",
        subject,
        f"not imported: {gap}; add type hints and import again, or write its ToolSpec by hand",
    )


def tool_object_ref(report: ImportReport, subject: str, tool: Any, fn: Any, ref: str) -> str | None:
    """An importable ``module:name`` to call a tool through its SDK: the module-level attribute holding the
    tool object (its SDK entry point checks and converts the arguments), else the function itself; None,
    with the reason in the report, when neither can be imported by name."""
    holder = holder_ref(tool, [getattr(fn, "__module__", ""), source_module(ref)])
    found = holder or function_ref(fn)
    if found is None:
        report.add("not_portable", f"{subject} ({where(fn)})", UNIMPORTABLE)
    return found


TC_PARAM = "portagent_tool_context"
"""The ``ToolContext`` parameter of generated shims (a name no tool argument uses)."""


def where(obj: Any) -> str:
    """``file:line`` of a native function or class, relative to the current folder when inside it —
    the place import-report.md points at for what was not imported."""
    import os

    target = inspect.unwrap(obj) if callable(obj) else obj
    try:
        file = inspect.getsourcefile(target) or inspect.getfile(target)
        _, line = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return f"defined in {getattr(target, '__module__', '?')}"
    try:
        rel = os.path.relpath(file)
        file = rel if not rel.startswith("..") else file
    except ValueError:
        pass
    return f"{file}:{max(line, 1)}"


def sdk_context_uses(fn: Any, param: str | None, attrs: Iterable[str]) -> list[tuple[str, str]]:
    """Where ``fn`` uses members of its SDK context parameter ``param`` that have no portable equivalent:
    ``[("file:line", "param.member"), …]`` read from its source (empty when there is none)."""
    if not param:
        return []
    target = inspect.unwrap(fn)
    try:
        file = inspect.getsourcefile(target) or "?"
        lines, first = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return []
    here = where(target).rpartition(":")[0] or file
    pattern = re.compile(rf"\b{re.escape(param)}\.({'|'.join(re.escape(a) for a in attrs)})\b")
    found: list[tuple[str, str]] = []
    for offset, text in enumerate(lines):
        for m in pattern.finditer(text):
            found.append((f"{here}:{first + offset}", f"{param}.{m.group(1)}"))
    return found


def takes_param(fn: Any, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


# --- schemas -------------------------------------------------------------------------------------

_TYPED = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "items", "properties", "not")


def schema_gap(schema: Any) -> str | None:
    """Why a native tool schema cannot become a ToolSpec ``input_schema`` (None when it can).

    A parameter with no type information at all is what an untyped function produces (``def f(x)``):
    the schema would accept anything, so the contract would be a guess — the tool is not imported."""
    if (
        not isinstance(schema, dict)
        or schema.get("type") != "object"
        or not isinstance(schema.get("properties"), dict)
    ):
        return "its schema is not an object schema with properties"
    fault = schema_problem(schema)
    if fault is not None:
        return f"its schema is not valid JSON Schema: {fault.message}"
    untyped = _untyped(schema, "")
    if untyped:
        return (
            f"parameter {untyped!r} has no type (an untyped function parameter), so no schema can be "
            "produced for it"
        )
    return None


def _untyped(schema: dict[str, Any], path: str) -> str | None:
    for name, sub in (schema.get("properties") or {}).items():
        where = f"{path}.{name}" if path else str(name)
        if not isinstance(sub, dict) or not any(k in sub for k in _TYPED):
            return where
        found = _untyped(sub, where)
        if found:
            return found
    items = schema.get("items")
    if isinstance(items, dict) and "properties" in items:
        return _untyped(items, path + "[]")
    return None


def placeholder_instructions(agent: str, why: str) -> str:
    """Instructions written into an imported spec when the native agent had none usable: a visible
    marker for the user to replace (listed in import-report.md), never a silent empty prompt."""
    return f"[instructions to write] ({agent}): {why}. Write this agent's instructions here."


class ReaderState:
    """What every native-agent reader keeps while it walks an agent graph (one per import)."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self.agents: dict[int, DraftAgent] = {}
        self.tools: dict[int, DraftTool | None] = {}
        """By the native tool's id; ``None`` while it is being read (or when it was not imported)."""
        self.agent_names: Names = agent_names()
        self.tool_names: Names = tool_names()
        self.rules: list[PolicyRuleDraft] = []
        self.shim_imports: dict[str, str] = {}

    def draft(self, sdk: str, root: DraftAgent) -> ImportDraft:
        """What the reader found, as the draft the writer renders."""
        return ImportDraft(
            sdk=sdk,
            root=root,
            report=self.report,
            rules=self.rules,
            shim_imports=list(self.shim_imports.values()),
        )
