"""Static checks behind ``portagent validate``: everything that can be known without running.

Per file kind: agents (tools resolved, policy rules that match nothing, delegation, capabilities per
provider), tools (JSON Schema well-formedness, examples), policies, suites, emulator scripts.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from portagent.contracts.agent import PROVIDERS
from portagent.contracts.bundle import AgentBundle, load_agent
from portagent.contracts.capabilities import PROFILES, missing_capabilities
from portagent.contracts.errors import SpecError, SpecProblem, UsageError
from portagent.contracts.loader import iter_spec_files, load_spec_file
from portagent.contracts.policy import PermissionPolicy
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


def schema_problems(schema: dict[str, Any] | None, label: str, path: str) -> list[SpecProblem]:
    """A JSON Schema must itself be valid against the 2020-12 metaschema."""
    if schema is None:
        return []
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        where = ".".join(str(p) for p in e.absolute_path)
        return [SpecProblem(label, path + (f".{where}" if where else ""), f"malformed JSON Schema: {e.message}")]
    return []


def tool_problems(tool: ToolSpec, label: str, prefix: str = "") -> list[SpecProblem]:
    out = schema_problems(tool.input_schema, label, f"{prefix}input_schema")
    out += schema_problems(tool.output_schema, label, f"{prefix}output_schema")
    if out:
        return out
    validator = Draft202012Validator(tool.input_schema)
    for i, ex in enumerate(tool.examples.valid):
        errs = list(validator.iter_errors(ex))
        if errs:
            out.append(SpecProblem(label, f"{prefix}examples.valid.{i}",
                                   f"valid example fails input_schema: {errs[0].message}"))
    for i, bad in enumerate(tool.examples.invalid):
        # Only schema-level codes can be checked statically; the others are exercised by the tests.
        if bad.error == "validation_error" and validator.is_valid(bad.args):
            out.append(SpecProblem(label, f"{prefix}examples.invalid.{i}",
                                   "invalid example passes input_schema (expected validation_error)"))
    return out


def _rule_hits(rule: Any, tools: list[ToolSpec]) -> list[ToolSpec]:
    return [t for t in tools
            if (rule.tool is None or fnmatch.fnmatchcase(t.name, rule.tool))
            and (not rule.effect or t.effect in rule.effect)]


def policy_problems(policy: PermissionPolicy, tools: list[ToolSpec], label: str,
                    builtins: list[str] | tuple[str, ...] = ()) -> list[SpecProblem]:
    """Rules that can match no tool of the agent; allow rules that reach a privileged tool implicitly.
    Granted vendor built-ins (``builtin_tools``) count as tools a rule may name."""
    out = []
    for i, rule in enumerate(policy.rules):
        hits = _rule_hits(rule, tools)
        names_builtin = rule.tool is not None and any(fnmatch.fnmatchcase(b, rule.tool) for b in builtins)
        if (rule.tool or rule.effect) and not hits and not names_builtin:
            out.append(SpecProblem(label, f"rules.{i}", f"rule {rule.id!r} matches no tool of the agent "
                                   f"(tools: {', '.join(t.name for t in tools) or 'none'})"))
        if rule.decision == "allow":
            for t in hits:
                explicit = "privileged_operation" in rule.effect or rule.tool == t.name
                if t.effect == "privileged_operation" and not explicit:
                    out.append(SpecProblem(label, f"rules.{i}",
                                           f"rule {rule.id!r} would allow privileged tool {t.name!r} implicitly; "
                                           "name the tool or list effect privileged_operation"))
    return out


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
        from portagent.adapters.adk_events import output_schema_problems, tool_schema_problems

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
                result.problems.append(SpecProblem(label, f"tools.{i}.name", f"duplicate tool name {t.name!r}"))
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
        from portagent.evals.suite import load_suite  # resolves case files, agent specs and scripts

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
