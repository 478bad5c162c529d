"""What the OpenAI adapter notes about a spec (no SDK import); it lacks nothing its profile has."""

from __future__ import annotations

from portagent.adapters.openai.schema import strict_compatible
from portagent.contracts.bundle import AgentBundle


def notes(bundle: AgentBundle) -> list[str]:
    """Not lacks: strict mode falls back for a schema it would change (the gateway still checks it)."""
    out: list[str] = []
    for name, tool in bundle.all_tools().items():
        if not strict_compatible(tool.input_schema):
            out.append(
                f"openai: tool {name} is declared with strict_json_schema false (its schema is not "
                "strict-compatible); the gateway still enforces every keyword"
            )
    return out
