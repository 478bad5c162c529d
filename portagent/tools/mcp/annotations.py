"""Effect classes ↔ MCP tool annotations: the one mapping, both ways (docs/mcp.md has the table).

MCP annotations are *hints* (spec: clients must not trust them from untrusted servers); portagent's
effect class is the contract the policy decides on. Serving, a ToolSpec's effect is stated as hints;
sourcing, hints become an effect class — conservatively, and only when ``trust_annotations`` is on.

Serving (``hints_for``):

=====================  ============  ===============  ==============  =============
effect                 readOnlyHint  destructiveHint  idempotentHint  openWorldHint
=====================  ============  ===============  ==============  =============
read, compute          true          false            true            false
prepare_change         false         false            idempotency     false
reversible_write       false         reversible=false idempotency     false
external_effect        false         not reversible   idempotency     true
privileged_operation   false         not reversible   idempotency     false
=====================  ============  ===============  ==============  =============

"idempotency" means ``idempotency.required`` (the gateway's effect ledger then never repeats the
effect for the same key). ``reversible=false`` means true only when the ToolSpec says
``reversible: false``; "not reversible" means true unless it says ``reversible: true``.

Sourcing (``effect_from_hints``), first match wins:

1. ``readOnlyHint: true`` → ``read``;
2. ``openWorldHint: true`` (stated) → ``external_effect``;
3. ``destructiveHint: false`` (stated: additive updates only) → ``reversible_write``;
4. anything else, including no annotations at all → ``external_effect`` (the policy default for it
   is ``approval_required``).
"""

from __future__ import annotations

from typing import Any

from portagent.contracts.tool import Effect, ToolSpec

READ_EFFECTS: frozenset[str] = frozenset({"read", "compute"})


def hints_for(tool: ToolSpec) -> dict[str, bool]:
    """The MCP annotations (wire names) stating a ToolSpec's effect class."""
    effect = tool.effect
    read_only = effect in READ_EFFECTS
    if read_only or effect == "prepare_change":
        destructive = False
    elif effect == "reversible_write":
        destructive = tool.reversible is False
    else:
        destructive = tool.reversible is not True
    return {
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": read_only or tool.idempotency.required,
        "openWorldHint": effect == "external_effect",
    }


def effect_from_hints(annotations: Any) -> Effect:
    """The effect class a listed tool's annotations imply (``external_effect`` without any)."""
    if annotations is None:
        return "external_effect"

    def get(key: str) -> Any:
        if isinstance(annotations, dict):
            return annotations.get(key)
        return getattr(annotations, _attr(key), None)

    if get("readOnlyHint") is True:
        return "read"
    if get("openWorldHint") is True:
        return "external_effect"
    if get("destructiveHint") is False:
        return "reversible_write"
    return "external_effect"


def _attr(wire: str) -> str:
    return {
        "readOnlyHint": "read_only_hint",
        "destructiveHint": "destructive_hint",
        "idempotentHint": "idempotent_hint",
        "openWorldHint": "open_world_hint",
    }[wire]
