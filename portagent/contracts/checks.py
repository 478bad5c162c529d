"""Static checks behind ``portagent validate``: everything that can be known without running.

Spec-level checks only (JSON Schema well-formedness, examples, policy rules that match nothing):
what a provider can run is decided by ``adapters.portability``; ``runtime.validate`` combines both.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from portagent.contracts.errors import SpecProblem
from portagent.contracts.policy import PermissionPolicy
from portagent.contracts.tool import ToolSpec


def schema_problems(schema: dict[str, Any] | None, label: str, path: str) -> list[SpecProblem]:
    """A JSON Schema must itself be valid against the 2020-12 metaschema."""
    if schema is None:
        return []
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        where = ".".join(str(p) for p in e.absolute_path)
        return [
            SpecProblem(label, path + (f".{where}" if where else ""), f"malformed JSON Schema: {e.message}")
        ]
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
            out.append(
                SpecProblem(
                    label,
                    f"{prefix}examples.valid.{i}",
                    f"valid example fails input_schema: {errs[0].message}",
                )
            )
    for i, bad in enumerate(tool.examples.invalid):
        # Only schema-level codes can be checked statically; the others are exercised by the tests.
        if bad.error == "validation_error" and validator.is_valid(bad.args):
            out.append(
                SpecProblem(
                    label,
                    f"{prefix}examples.invalid.{i}",
                    "invalid example passes input_schema (expected validation_error)",
                )
            )
    return out


def _rule_hits(rule: Any, tools: list[ToolSpec]) -> list[ToolSpec]:
    return [
        t
        for t in tools
        if (rule.tool is None or fnmatch.fnmatchcase(t.name, rule.tool))
        and (not rule.effect or t.effect in rule.effect)
    ]


def policy_problems(
    policy: PermissionPolicy, tools: list[ToolSpec], label: str, builtins: list[str] | tuple[str, ...] = ()
) -> list[SpecProblem]:
    """Rules that can match no tool of the agent; allow rules that reach a privileged tool implicitly.
    Granted vendor built-ins (``builtin_tools``) count as tools a rule may name."""
    out = []
    for i, rule in enumerate(policy.rules):
        hits = _rule_hits(rule, tools)
        names_builtin = rule.tool is not None and any(fnmatch.fnmatchcase(b, rule.tool) for b in builtins)
        if (rule.tool or rule.effect) and not hits and not names_builtin:
            out.append(
                SpecProblem(
                    label,
                    f"rules.{i}",
                    f"rule {rule.id!r} matches no tool of the agent "
                    f"(tools: {', '.join(t.name for t in tools) or 'none'})",
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
