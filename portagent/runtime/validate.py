"""``portagent validate``: every problem of spec files, suites and emulator scripts, plus the
portability verdict when a provider is named (``--provider``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from portagent.adapters.portability import verdict
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.checks import spec_problems, tool_problems
from portagent.contracts.errors import SpecError, SpecProblem, UsageError
from portagent.contracts.loader import iter_spec_files, load_spec_file, loading_once
from portagent.contracts.providers import PROVIDERS
from portagent.contracts.tool import ToolSet, ToolSpec


@dataclass
class FileResult:
    path: str
    kind: str | None
    problems: list[SpecProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def bundle_problems(
    bundle: AgentBundle, provider: str | None, *, list_mcp: bool = False
) -> tuple[list[SpecProblem], list[str]]:
    """Spec-level problems plus the portability verdict: with ``provider`` its lacks are problems (each
    with its field path); without, each provider that cannot run the agent is a note.

    Rules may name the tools of a declared MCP source: its last live listing (kept by every run) makes
    that check exact; ``list_mcp`` lists the servers now (starting them) instead."""
    listings: dict[str, list[str]] = {}
    if any(n.spec.mcp_servers for n in bundle.agents.values()):
        from portagent.tools.mcp.sources import list_live, remembered_listings

        if list_mcp:
            import asyncio

            listings = asyncio.run(list_live(bundle))
        else:
            listings = remembered_listings(bundle)
    problems = spec_problems(bundle, listings) + handler_problems(bundle)
    notes: list[str] = []
    for p in [provider] if provider else list(PROVIDERS):
        found = verdict(bundle, p)
        if provider:
            problems += found.problems()
            notes += found.notes
        else:
            notes += [problem.message for problem in found.problems()]
    return problems, notes


def handler_problems(bundle: AgentBundle) -> list[SpecProblem]:
    """A tool whose handler module cannot be found fails every call at run time (``handler_error``): found
    here without running anything — the module file is looked up next to each agent spec, then on
    ``sys.path``, as the runner resolves handlers; a module that raises on import or a missing function
    still shows only when a call imports it."""
    import sys
    from importlib.machinery import PathFinder

    folders = [str(n.path.parent.resolve()) for n in bundle.agents.values() if n.path is not None]
    search = list(dict.fromkeys([*folders, *sys.path]))
    out: list[SpecProblem] = []
    seen: set[str] = set()
    for node in bundle.agents.values():
        for spec in node.tools.values():
            module = spec.handler.partition(":")[0]
            if not spec.handler or module in seen:
                continue
            seen.add(module)
            if module in sys.modules:
                continue
            parts, where = module.split("."), search
            for i in range(len(parts)):
                found = PathFinder.find_spec(".".join(parts[: i + 1]), where)
                if found is None:
                    label = str(node.path) if node.path is not None else node.name
                    out.append(
                        SpecProblem(
                            label,
                            f"tools.{spec.name}.handler",
                            f"handler module {module!r} of tool {spec.name!r} not found (looked next to the "
                            "agent spec and on sys.path; PYTHONPATH adds folders)",
                        )
                    )
                    break
                where = list(found.submodule_search_locations or [])
    return out


def check_file(path: Path, provider: str | None = None, *, list_mcp: bool = False) -> FileResult:
    label = str(path)
    try:
        doc = load_spec_file(path)
    except SpecError as e:
        return FileResult(label, None, e.problems)
    kind = getattr(doc, "kind", None)
    result = FileResult(label, kind)
    if isinstance(doc, ToolSpec):
        result.problems += tool_problems(doc, label)
    elif isinstance(doc, ToolSet):
        names = [t.name for t in doc.tools]
        for i, t in enumerate(doc.tools):
            if names.count(t.name) > 1 and names.index(t.name) != i:
                result.problems.append(
                    SpecProblem(label, f"tools.{i}.name", f"duplicate tool name {t.name!r}")
                )
            result.problems += tool_problems(t, label, f"tools.{i}.")
    elif kind == "agent":
        try:
            bundle = load_agent(path)
        except SpecError as e:
            result.problems += e.problems
        else:
            probs, notes = bundle_problems(bundle, provider, list_mcp=list_mcp)
            result.problems += probs
            result.notes += notes
    elif kind == "suite":
        from portagent.contracts.loaded_suite import (
            load_suite,  # resolves case files, agent specs and scripts
        )

        try:
            load_suite(path)
        except SpecError as e:
            result.problems += e.problems
    return result


def check_paths(paths: list[str], provider: str | None = None, *, list_mcp: bool = False) -> list[FileResult]:
    """Check files and folders. Raises UsageError when a path is missing or a folder holds no spec."""
    for raw in paths:
        if not raw.strip():
            raise UsageError("an empty path was given; name spec files or folders")
        if not Path(raw).exists():
            if Path(raw).is_symlink():  # a dangling link or a loop of links: say so, not "no such file"
                raise UsageError(f"{raw}: a symbolic link that leads nowhere (dangling, or a loop of links)")
            raise UsageError(f"{raw}: no such file or directory")
        if Path(raw).is_dir() and not iter_spec_files([raw]):
            raise UsageError(f"{raw}: no spec files (*.yaml, *.yml, *.json) in this folder")
    with loading_once():
        return [check_file(f, provider, list_mcp=list_mcp) for f in iter_spec_files(paths)]
