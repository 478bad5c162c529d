"""``portagent validate``: every problem of spec files, suites and emulator scripts, plus the
portability verdict when a provider is named (``--provider``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portagent.contracts.agent import PROVIDERS
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.capabilities import PROFILES, missing_capabilities
from portagent.contracts.checks import policy_problems, schema_problems, tool_problems
from portagent.contracts.errors import SpecError, SpecProblem, UsageError
from portagent.contracts.loader import iter_spec_files, load_spec_file
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


def bundle_problems(bundle: AgentBundle, provider: str | None) -> tuple[list[SpecProblem], list[str]]:
    problems: list[SpecProblem] = []
    notes: list[str] = []
    for node in bundle.agents.values():
        label = str(node.path) if node.path else node.name
        for i, t in enumerate(node.spec.tools):
            if isinstance(t, ToolSpec):
                problems += tool_problems(t, label, f"tools.{i}.")
        problems += schema_problems(node.spec.output_schema, label, "output_schema")
    # A policy shared by several agents (sub-agents inherit it) is checked against all their tools.
    groups: dict[int, tuple[Any, str, dict[str, ToolSpec], set[str]]] = {}
    for node in bundle.agents.values():
        label = str(node.policy_path or node.path or node.name)
        entry = groups.setdefault(id(node.policy), (node.policy, label, {}, set()))
        entry[2].update(node.tools)
        entry[3].update(node.spec.builtin_tools)
    for policy, plabel, tools, builtins in groups.values():
        problems += policy_problems(policy, list(tools.values()), plabel, sorted(builtins))
    root_label = str(bundle.node.path)
    if provider == "adk":
        # Gemini function declarations express a subset of JSON Schema (adk_events cites the list);
        # adk_events imports no SDK, so this stays a static check.
        from portagent.adapters.adk.events import output_schema_problems, tool_schema_problems

        for node in bundle.agents.values():
            label = str(node.path) if node.path else node.name
            for name, t in node.tools.items():
                for msg in tool_schema_problems(name, t.input_schema):
                    problems.append(SpecProblem(label, f"tools[{name}]", f"adk: {msg}"))
            if node.spec.output_schema is not None:
                for msg in output_schema_problems(node.spec.output_schema):
                    problems.append(SpecProblem(label, "output_schema", f"adk: {msg}"))
    providers = [provider] if provider else list(PROVIDERS)
    cycle = bundle.delegation_cycle()
    kinds = {e.kind for n in bundle.agents.values() for e in n.edges}
    needed = list(bundle.spec.required_capabilities)
    for p in providers:
        prof = PROFILES[p]
        lacks = missing_capabilities(needed, prof)
        if "handoff" in kinds and not prof.handoffs:
            lacks.append("handoffs")
        if "agent_as_tool" in kinds and not prof.agents_as_tools:
            lacks.append("agents_as_tools")
        if cycle and not prof.handoff_cycles:
            lacks.append(f"handoff_cycles (cycle: {' -> '.join(cycle)})")
        if not lacks:
            continue
        msg = f"provider {p!r} cannot run this agent: lacks {', '.join(dict.fromkeys(lacks))}"
        if provider:
            problems.append(SpecProblem(root_label, "", msg))
        else:
            notes.append(msg)
    return problems, notes


def check_file(path: Path, provider: str | None = None) -> FileResult:
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
            probs, notes = bundle_problems(bundle, provider)
            result.problems += probs
            result.notes += notes
    elif kind == "suite":
        from portagent.contracts.suite import load_suite  # resolves case files, agent specs and scripts

        try:
            load_suite(path)
        except SpecError as e:
            result.problems += e.problems
    return result


def check_paths(paths: list[str], provider: str | None = None) -> list[FileResult]:
    """Check files and folders. Raises UsageError when a path is missing or a folder holds no spec."""
    for raw in paths:
        if not Path(raw).exists():
            raise UsageError(f"{raw}: no such file or directory")
        if Path(raw).is_dir() and not iter_spec_files([raw]):
            raise UsageError(f"{raw}: no spec files (*.yaml, *.yml, *.json) in this folder")
    return [check_file(f, provider) for f in iter_spec_files(paths)]
