"""Static checks behind ``portagent validate``: everything that can be known without running.

Spec-level checks only (JSON Schema well-formedness, examples, policy rules that match nothing):
what a provider can run is decided by ``adapters.portability``; ``runtime.validate`` combines both.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from portagent.contracts.agent import McpServerRef
from portagent.contracts.bundle import AgentBundle
from portagent.contracts.errors import SpecProblem
from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.schema_faults import schema_faults_cached
from portagent.contracts.schema_plain import plainly_invalid, plainly_valid
from portagent.contracts.tool import ToolSpec


def schema_problems(schema: dict[str, Any] | None, label: str, path: str) -> list[SpecProblem]:
    """A JSON Schema must itself be valid against the 2020-12 metaschema: every fault, each in its place."""
    out = []
    for fault in () if schema is None else schema_faults_cached(schema):
        where = ".".join(str(p) for p in fault.path)
        out.append(
            SpecProblem(
                label, path + (f".{where}" if where else ""), f"malformed JSON Schema: {fault.message}"
            )
        )
    return out


def tool_problems(tool: ToolSpec, label: str, prefix: str = "") -> list[SpecProblem]:
    out = schema_problems(tool.input_schema, label, f"{prefix}input_schema")
    out += schema_problems(tool.output_schema, label, f"{prefix}output_schema")
    if out:
        return out
    schema = tool.input_schema
    for i, ex in enumerate(tool.examples.valid):
        if plainly_valid(schema, ex):
            continue
        errs = list(_validator(schema).iter_errors(ex))
        if errs:
            out.append(
                SpecProblem(
                    label,
                    f"{prefix}examples.valid.{i}",
                    f"valid example fails input_schema: {errs[0].message}",
                )
            )
    for i, bad in enumerate(tool.examples.invalid):
        # Only schema-level codes can be checked statically; the others are exercised by the tests.
        if (
            bad.error == "validation_error"
            and not plainly_invalid(schema, bad.args)
            and _validator(schema).is_valid(bad.args)
        ):
            out.append(
                SpecProblem(
                    label,
                    f"{prefix}examples.invalid.{i}",
                    "invalid example passes input_schema (expected validation_error)",
                )
            )
    return out


def _validator(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def _rule_hits(rule: Any, tools: list[ToolSpec]) -> list[ToolSpec]:
    return [
        t
        for t in tools
        if (rule.tool is None or fnmatch.fnmatchcase(t.name, rule.tool))
        and (not rule.effect or t.effect in rule.effect)
    ]


@dataclass(frozen=True)
class SourcedTools:
    """Tools an agent gets from one MCP server at run time (``mcp_servers``), as far as known statically."""

    server: str
    """The server's name in the spec."""
    prefix: str
    """The prefix every tool of it gets (``<server>_`` by default)."""
    names: tuple[str, ...] | None = None
    """Portable names from the allow-list or a listing; None when the server was never listed."""

    def describe(self) -> str:
        if self.names is None:
            return f"{self.prefix}* (not listed yet)"
        return ", ".join(self.names) or "none"

    def may_match(self, pattern: str) -> bool:
        """Could a rule's tool pattern name a tool of this server? Exact when the names are known;
        otherwise a pattern whose literal head agrees with the prefix is accepted (the listing decides
        at run time, where the rule is enforced on the listed tools)."""
        if self.names is not None:
            return any(fnmatch.fnmatchcase(n, pattern) for n in self.names)
        head = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
        return head.startswith(self.prefix) or self.prefix.startswith(head)


def sourced_tools(refs: list[McpServerRef], listings: Mapping[str, list[str]]) -> list[SourcedTools]:
    """What each MCP source of an agent will add: its allow-list, else its last listing, else unknown."""
    out = []
    for ref in refs:
        raw = ref.allow or listings.get(ref.name)
        names = tuple(ref.portable_name(n) for n in raw) if raw is not None else None
        out.append(SourcedTools(ref.name, ref.tool_prefix, names))
    return out


def policy_problems(
    policy: PermissionPolicy,
    tools: list[ToolSpec],
    label: str,
    builtins: list[str] | tuple[str, ...] = (),
    sourced: list[SourcedTools] | tuple[SourcedTools, ...] = (),
) -> list[SpecProblem]:
    """Rules that can match no tool of the agent; allow rules that reach a privileged tool implicitly.
    Granted vendor built-ins (``builtin_tools``) and tools from the agent's MCP sources count as tools a
    rule may name (an effect-only rule may match an MCP tool whose effect only its listing tells)."""
    out = []
    for i, rule in enumerate(policy.rules):
        hits = _rule_hits(rule, tools)
        names_builtin = rule.tool is not None and any(fnmatch.fnmatchcase(b, rule.tool) for b in builtins)
        if rule.tool is not None:
            names_sourced = any(s.may_match(rule.tool) for s in sourced)
        else:
            names_sourced = bool(sourced)
        if (rule.tool or rule.effect) and not hits and not names_builtin and not names_sourced:
            out.append(
                SpecProblem(
                    label,
                    f"rules.{i}",
                    f"rule {rule.id!r} matches no tool of the agent "
                    f"(tools: {', '.join(t.name for t in tools) or 'none'}"
                    + "".join(f"; MCP {s.server}: {s.describe()}" for s in sourced)
                    + ")",
                )
            )
        if rule.decision == "allow":
            for t in hits:
                explicit = "privileged_operation" in rule.effect or rule.tool == t.name
                if t.effect == "privileged_operation" and not explicit:
                    out.append(
                        SpecProblem(
                            label,
                            f"rules.{i}",
                            f"rule {rule.id!r} would allow privileged tool {t.name!r} implicitly; "
                            "name the tool or list effect privileged_operation",
                        )
                    )
    return out


def spec_problems(bundle: AgentBundle, listings: Mapping[str, list[str]] | None = None) -> list[SpecProblem]:
    """Every provider-independent problem of a loaded agent: its tools, output schemas and policies.
    ``listings``: the last known tool names of its MCP servers (server name → names), if any."""
    problems: list[SpecProblem] = []
    for node in bundle.agents.values():
        label = str(node.path) if node.path else node.name
        for i, t in enumerate(node.spec.tools):
            if isinstance(t, ToolSpec):
                problems += tool_problems(t, label, f"tools.{i}.")
        problems += schema_problems(node.spec.output_schema, label, "output_schema")
    # A policy shared by several agents (sub-agents inherit it) is checked against all their tools.
    groups: dict[
        int, tuple[PermissionPolicy, str, dict[str, ToolSpec], set[str], dict[str, McpServerRef]]
    ] = {}
    for node in bundle.agents.values():
        label = str(node.policy_path or node.path or node.name)
        entry = groups.setdefault(id(node.policy), (node.policy, label, {}, set(), {}))
        entry[2].update(node.tools)
        entry[3].update(node.spec.builtin_tools)
        entry[4].update({ref.name: ref for ref in node.spec.mcp_servers})
    for policy, plabel, tools, builtins, refs in groups.values():
        sourced = sourced_tools(list(refs.values()), listings or {})
        problems += policy_problems(policy, list(tools.values()), plabel, sorted(builtins), sourced)
    return problems
