"""``portagent capabilities``: the capability profiles (``contracts.capabilities.PROFILES``) with the SDK
and CLI versions installed here.

The profiles are data, usable without any SDK; this module only adds what is installed, read from
package metadata (no SDK is imported). ``tests/migration/test_capabilities.py`` drives every flag of
every profile against the adapters, so the table printed here is what they do.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from portagent.adapters.base import REGISTRY
from portagent.contracts.capabilities import CAPABILITY_FLAGS, PROFILES, ProviderCapabilities
from portagent.contracts.providers import PROVIDERS

NOT_INSTALLED = "not installed"

PORTAGENT_USES: dict[str, tuple[bool, str]] = {
    "handoffs": (True, "mapped to the SDK's handoff (a spec's handoffs)"),
    "agents_as_tools": (True, "mapped to the SDK's agent tool / subagent (a spec's agent_as_tool)"),
    "handoff_cycles": (
        True,
        "allowed where the SDK allows them; refused by the portability verdict elsewhere",
    ),
    "structured_output": (True, "the spec's output_schema, then checked again by portagent (output_valid)"),
    "sessions": (
        False,
        "not the SDK's: portagent keeps each thread itself ($PORTAGENT_HOME/sessions.db; run --session ID, "
        "portagent sessions) and sends its earlier turns as input, the same on every provider, so a thread "
        "continues on another provider (docs/sessions.md)",
    ),
    "streaming": (True, "run --stream / RunOptions.streaming"),
    "mcp": (
        False,
        "portagent connects MCP servers itself (tools/mcp, docs/mcp.md) and offers their tools through "
        "the gateway; the SDK's own MCP client is not used",
    ),
    "native_tracing": (False, "replaced: portagent writes its own trace (trace.jsonl, OTel export)"),
    "vendor_cost": (True, "the run's cost_source is 'vendor' when the SDK reports it"),
    "builtin_tools": (True, "granted by name in the spec; governed (policy, approval) by the gateway"),
    "approvals_resume": (
        False,
        "portagent resumes a paused run by replaying its journal up to the paused call, the same on every "
        "provider (ADR 0007)",
    ),
}
"""Capability flag → (does portagent use the SDK's feature where the SDK offers it, how)."""


def flag_descriptions() -> dict[str, str]:
    """Each flag's meaning, from the contract's own field docstrings."""
    from portagent.contracts._docs import field_docs

    docs = field_docs(ProviderCapabilities)
    return {name: docs.get(name, "").strip() for name in CAPABILITY_FLAGS}


def _package_version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def claude_cli_version() -> str | None:
    """The Claude Code CLI bundled with claude-agent-sdk, read from its version file (no import)."""
    try:
        from importlib.util import find_spec

        spec = find_spec("claude_agent_sdk")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    marker = folder / "_cli_version.py"
    if marker.is_file():
        for line in marker.read_text(encoding="utf-8").splitlines():
            if line.startswith("__cli_version__"):
                return line.split("=", 1)[1].strip().strip("\"'")
    return None


def installed(provider: str) -> dict[str, Any]:
    info = REGISTRY[provider]
    sdk_version = _package_version(info.package)
    out: dict[str, Any] = {
        "sdk": info.package,
        "sdk_version": sdk_version or NOT_INSTALLED,
        "installed": sdk_version is not None,
        "extra": info.extra,
    }
    if provider == "claude":
        out["cli"] = "Claude Code (bundled)"
        out["cli_version"] = (claude_cli_version() or NOT_INSTALLED) if sdk_version else NOT_INSTALLED
    return out


def portagent_uses(provider: str) -> dict[str, bool]:
    """Per flag: does portagent use the feature on ``provider`` (only where its SDK offers it)?"""
    offered = PROFILES[provider].model_dump()
    return {flag: bool(offered[flag]) and PORTAGENT_USES[flag][0] for flag in CAPABILITY_FLAGS}


def matrix() -> dict[str, Any]:
    """What ``capabilities --json`` prints: flags with their meaning and how portagent uses them, and per
    provider its SDK, what the SDK offers (``capabilities``) and what portagent uses (``portagent_uses``)."""
    return {
        "flags": flag_descriptions(),
        "portagent": {flag: PORTAGENT_USES[flag][1] for flag in CAPABILITY_FLAGS},
        "providers": {
            p: {**installed(p), "capabilities": PROFILES[p].model_dump(), "portagent_uses": portagent_uses(p)}
            for p in PROVIDERS
        },
    }


def render_table(data: dict[str, Any]) -> str:
    providers = list(data["providers"])
    rows = [["flag", *(f"{p} {col}" for p in providers for col in ("SDK", "portagent"))]]
    for flag in data["flags"]:
        cells = []
        for p in providers:
            d = data["providers"][p]
            cells += [
                "yes" if d["capabilities"][flag] else "no",
                "yes" if d["portagent_uses"][flag] else "no",
            ]
        rows.append([flag, *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for p in providers:
        d = data["providers"][p]
        line = f"{p}: {d['sdk']} {d['sdk_version']}"
        if "cli_version" in d:
            line += f", {d['cli']} {d['cli_version']}"
        if not d["installed"]:
            line += f" (pip install 'portagent[{d['extra']}]')"
        lines.append(line)
    lines.append("")
    for i, r in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[j]) for j, cell in enumerate(r)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    lines.append("SDK: what the vendor SDK offers. portagent: what portagent uses of it, and how.")
    lines.append("")
    lines += [f"{flag}: {text} portagent: {data['portagent'][flag]}." for flag, text in data["flags"].items()]
    return "\n".join(lines)
