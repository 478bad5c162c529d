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
    problems = spec_problems(bundle, listings)
    notes: list[str] = []
    for p in [provider] if provider else list(PROVIDERS):
        found = verdict(bundle, p)
        if provider:
            problems += found.problems()
            notes += found.notes
        else:
            notes += [problem.message for problem in found.problems()]
    return problems, notes


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
