"""``portagent port-check AGENT --to P``: what the spec needs that provider P lacks, and its portability ratio.

What a target lacks is the one portability verdict (``adapters/portability.py``), the same that
``validate --provider``, ``run``, ``eval`` and ``export`` give: each lack with its field path.

The portability ratio is the design source's: own contracts / (own contracts + provider-specific
dependencies). Own contracts are what portagent defines and every adapter translates (agent specs,
ToolSpecs, policies, output schemas, delegation edges, MCP servers governed by the gateway).
Provider-specific dependencies are what ties the spec to one vendor: granted built-in tools, vendor-only
model settings, and tool handlers whose module imports a vendor SDK (found by reading the module's
source, not importing it).
"""

from __future__ import annotations

import ast
import importlib.machinery
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.adapters.portability import verdict
from portagent.contracts.bundle import AgentBundle
from portagent.contracts.portability import Lack

VENDOR_MODULES: dict[str, str] = {
    "agents": "openai-agents",
    "openai": "openai",
    "google.adk": "google-adk",
    "google.genai": "google-genai",
    "claude_agent_sdk": "claude-agent-sdk",
    "anthropic": "anthropic",
    "langgraph": "langgraph",
    "langchain": "langchain",
    "langchain_core": "langchain-core",
    "langchain_openai": "langchain-openai",
    "langchain_anthropic": "langchain-anthropic",
    "langchain_google_genai": "langchain-google-genai",
}
"""Top-level imports that make a handler module depend on one vendor's SDK."""


@dataclass(frozen=True)
class Item:
    what: str
    detail: str = ""
    vendor: str | None = None
    """For a provider-specific dependency: the provider or package it ties the spec to."""


@dataclass
class PortCheck:
    agent: str
    target: str
    lacks: list[Lack] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    own: list[Item] = field(default_factory=list)
    dependencies: list[Item] = field(default_factory=list)

    @property
    def portable(self) -> bool:
        return not self.lacks

    @property
    def ratio(self) -> float:
        total = len(self.own) + len(self.dependencies)
        return round(len(self.own) / total, 4) if total else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "target": self.target,
            "portable": self.portable,
            "lacks": [
                {"feature": x.feature, "detail": x.detail, "file": x.file, "path": x.path} for x in self.lacks
            ],
            "portability_ratio": self.ratio,
            "own_contracts": [{"what": i.what, "detail": i.detail} for i in self.own],
            "provider_dependencies": [
                {"what": i.what, "detail": i.detail, "vendor": i.vendor} for i in self.dependencies
            ],
            "notes": list(self.notes),
        }

    def render(self) -> str:
        verdict = "portable" if self.portable else "NOT portable"
        lines = [f"{self.agent} → {self.target}: {verdict}"]
        if self.lacks:
            lines.append(f"{self.target} lacks what the spec needs:")
            lines += [f"  - {x.feature}: {x.detail} ({_where(x)})" for x in self.lacks]
        n_own, n_dep = len(self.own), len(self.dependencies)
        lines.append(
            f"portability ratio: {n_own}/{n_own + n_dep} = {self.ratio:.2f} "
            "(own contracts / (own contracts + provider-specific dependencies))"
        )
        lines.append(f"  own contracts ({n_own}):")
        lines += [f"    - {i.what}" + (f" — {i.detail}" if i.detail else "") for i in self.own]
        lines.append(f"  provider-specific dependencies ({n_dep}):" + (" none" if not n_dep else ""))
        lines += [f"    - {i.what} — {i.detail}" for i in self.dependencies]
        if self.notes:
            lines.append("notes:")
            lines += [f"  - {n}" for n in self.notes]
        return "\n".join(lines)


def port_check(bundle: AgentBundle, target: str) -> PortCheck:
    result = PortCheck(agent=bundle.root, target=target)
    _lacks(bundle, target, result)
    _inventory(bundle, result)
    return result


def _where(lack: Lack) -> str:
    return f"{Path(lack.file).name}: {lack.path}" if lack.path else Path(lack.file).name


# --- what the target lacks: the one portability verdict ----------------------------------------------


def _lacks(bundle: AgentBundle, target: str, out: PortCheck) -> None:
    found = verdict(bundle, target)
    out.lacks += found.lacks
    out.notes += found.notes


# --- the ratio -----------------------------------------------------------------------------------


def _inventory(bundle: AgentBundle, out: PortCheck) -> None:
    own, deps = out.own, out.dependencies
    policies: dict[int, Any] = {}
    for node in bundle.agents.values():
        own.append(Item(f"agent spec {node.name}@{node.spec.version}"))
        policies.setdefault(id(node.policy), node)
    for _, tool in sorted(bundle.all_tools().items()):
        own.append(Item(f"tool {tool.ref}", f"effect {tool.effect}"))
    for node in policies.values():
        own.append(
            Item(f"policy {node.policy.name} v{node.policy.version}", f"{len(node.policy.rules)} rule(s)")
        )
    for node in bundle.agents.values():
        if node.spec.output_schema is not None:
            own.append(Item(f"output schema of {node.name}"))
        for edge in node.edges:
            own.append(Item(f"delegation {node.name} -> {edge.target}", edge.kind))
        for server in node.spec.mcp_servers:
            own.append(
                Item(f"MCP server {server.name}", "its tools run through the gateway on every provider")
            )
    for node in bundle.agents.values():
        for b in node.spec.builtin_tools:
            deps.append(Item(f"built-in tool {b} (on {node.name})", "runs inside Claude Code only", "claude"))
        if node.spec.models.openai_api != "responses":
            deps.append(
                Item(
                    f"models.openai_api: {node.spec.models.openai_api} (on {node.name})",
                    "an OpenAI API setting: the openai provider and langgraph's OpenAI chat models use it",
                    "openai",
                )
            )
    _handler_dependencies(bundle, out)


def _handler_dependencies(bundle: AgentBundle, out: PortCheck) -> None:
    """Vendor SDKs the handler modules import, each module looked for as a run looks for it
    (``tools/handlers.py`` ``bundle_scope``): in its tool's folder (a shared tools file's) first."""
    from portagent.tools.handlers import bundle_scope

    scope = bundle_scope(bundle)
    cache: dict[str, dict[str, str]] = {}
    missing: list[str] = []
    for name, tool in sorted(bundle.all_tools().items()):
        dirs = list(scope.order(tool.handler))
        module = tool.handler.partition(":")[0]
        if _module_file(module, dirs) is None and module not in missing:
            missing.append(module)
        vendors = _vendor_imports(module, dirs, cache, depth=2)
        for vendor_module, chain in sorted(vendors.items()):
            out.dependencies.append(
                Item(
                    f"handler of {name} ({tool.handler})",
                    f"{chain} imports {VENDOR_MODULES[vendor_module]} ({vendor_module}): it must "
                    "be installed wherever the agent runs; move the function to a module of "
                    "its own to drop this",
                    VENDOR_MODULES[vendor_module],
                )
            )
    for module in missing:
        out.notes.append(
            f"handler module {module!r} is not found in its tools file's folder, the spec folders or "
            "sys.path: its imports were not checked (run from the folder that holds it, or set PYTHONPATH)"
        )


def _vendor_imports(
    module: str, dirs: list[str], cache: dict[str, dict[str, str]], depth: int
) -> dict[str, str]:
    """Vendor SDK module → import chain, for ``module`` and (up to ``depth``) the local modules it imports.
    Source is parsed, never executed."""
    path = _module_file(module, dirs)
    if path is None:
        return {}
    key = str(path)  # two folders' ``tools`` are two modules
    if key in cache:
        return cache[key]
    cache[key] = {}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    dirs = [*dirs, *_added_paths(tree, path.parent)]
    for name in _imported_names(tree):
        vendor = next((v for v in VENDOR_MODULES if name == v or name.startswith(v + ".")), None)
        if vendor is not None:
            found.setdefault(vendor, module)
        elif depth > 0 and not name.startswith("portagent") and _is_local(name, dirs):
            for v, chain in _vendor_imports(name, dirs, cache, depth - 1).items():
                found.setdefault(v, f"{module} → {chain}")
    cache[key] = found
    return found


def _added_paths(tree: ast.Module, folder: Path) -> list[str]:
    """The folders a module puts on ``sys.path`` for its own imports, as the handler module ``portagent
    import`` writes does (``for _rel in ("../src", …):``, relative to the module's folder), so the
    modules it imports are checked wherever port-check is run from."""
    out: list[str] = []
    for node in tree.body:
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and node.target.id == "_rel"
            and isinstance(node.iter, ast.Tuple | ast.List)
        ):
            for elt in node.iter.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    out.append(str((folder / elt.value).resolve()))
    return out


def _imported_names(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def _module_file(module: str, dirs: list[str]) -> Path | None:
    """The file ``module`` is read from, found as the runner resolves handlers (``tools/handlers.py``): in
    the spec folders first — not a module of that name this process imported from somewhere else, such as
    another spec folder's ``tools.py`` — then ``sys.modules`` and ``sys.path``."""
    from portagent.core import handler_folders

    for d in dirs:
        if handler_folders.holds(module, d) is not None:
            return _find_file(module, [d])
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if file and handler_folders.folder_of(module) is None:
        return Path(file)
    return _find_file(module, sys.path)


def _find_file(module: str, where: list[str]) -> Path | None:
    top, *rest = module.split(".")
    spec = importlib.machinery.PathFinder.find_spec(top, where)
    if spec is None:
        return None
    if rest:
        base = (
            Path(next(iter(spec.submodule_search_locations or []), ""))
            if spec.submodule_search_locations
            else None
        )
        if base is None:
            return None
        candidate = base.joinpath(*rest)
        for option in (candidate.with_suffix(".py"), candidate / "__init__.py"):
            if option.is_file():
                return option
        return None
    return Path(spec.origin) if spec.origin and spec.origin.endswith(".py") else None


def _is_local(module: str, dirs: list[str]) -> bool:
    """A module found outside site-packages (the user's own code), not the standard library."""
    path = _module_file(module, dirs)
    if path is None:
        return False
    text = str(path)
    return (
        "site-packages" not in text and "dist-packages" not in text and not text.startswith(sys.base_prefix)
    )
