"""What OpenAI's strict function-calling mode can express (no SDK import: port-check and export use it)."""

from __future__ import annotations

from typing import Any


def strict_compatible(schema: Any) -> bool:
    """True when OpenAI strict mode would not change the schema's meaning.

    Strict mode (``strict_json_schema=True``) rewrites every property as required and forces
    ``additionalProperties: false`` (SDK_NOTES §5). That is only faithful when every object already
    lists all its properties as required, forbids extras, and has no free-form objects.
    """
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties")
        if not isinstance(props, dict) or not props:
            return False  # free-form object
        if schema.get("additionalProperties", True) is not False:
            return False
        if set(schema.get("required", [])) != set(props):
            return False
    for key in ("pattern", "format", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems"):
        if key in schema:
            return False  # strict mode rejects these keywords; keep the ToolSpec's own checks instead
    children: list[Any] = list((schema.get("properties") or {}).values())
    for key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
        if key in schema:
            children.append(schema[key])
    return all(strict_compatible(c) for c in children)
