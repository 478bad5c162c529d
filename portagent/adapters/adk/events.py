"""Google ADK / Gemini mapping helpers: usage, finish reasons, final text, the output-schema
declaration, and what Gemini can declare.

Pure functions with no SDK import, so ``validate`` (or anyone) can check a spec for ADK without
loading google-adk. ``portagent.adapters.adk.agent`` uses them.

Usage (google-genai ``GenerateContentResponseUsageMetadata``; Gemini API reference "UsageMetadata"):

    promptTokenCount         total input, cached content included      → input_tokens (OTel: input
    toolUsePromptTokenCount  input of built-in tool use (search, …)      includes cache; plus tool-use)
    cachedContentTokenCount  the cached part of the prompt             → cache_read_tokens
    candidatesTokenCount     visible output, thoughts EXCLUDED         ┐
    thoughtsTokenCount       thinking tokens                           ┴→ output_tokens (OTel: output
                                                                          includes reasoning) and
                                                                          reasoning_tokens = thoughts
Gemini reports no cache-write bucket (explicit caches are created by a separate API call), so
``cache_write_tokens`` is always 0. Google bills thinking tokens as output, so the cost computed from
``output_tokens`` is right.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# --- usage and finish reasons ---------------------------------------------------------------------


def _count(usage: Any, name: str) -> int:
    value = getattr(usage, name, None) if usage is not None else None
    return int(value or 0)


def usage_fields(usage: Any) -> dict[str, int]:
    """``record_model_call`` token fields (OTel semantics) from a genai usage-metadata object."""
    thoughts = _count(usage, "thoughts_token_count")
    return {
        "input_tokens": _count(usage, "prompt_token_count") + _count(usage, "tool_use_prompt_token_count"),
        "output_tokens": _count(usage, "candidates_token_count") + thoughts,
        "cache_read_tokens": _count(usage, "cached_content_token_count"),
        "cache_write_tokens": 0,
        "reasoning_tokens": thoughts,
    }


_LENGTH = {"MAX_TOKENS"}
_ERROR = {
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE",
}


def finish_reason(vendor: str | None, *, has_calls: bool, error_code: str | None = None) -> str:
    """Gemini's ``finishReason`` normalized to stop / tool_calls / length / error / other.

    A function-call turn ends with ``STOP`` on Gemini (there is no separate tool-use reason), so the
    presence of function calls decides ``tool_calls``."""
    if error_code and vendor in (None, "STOP"):
        return "error"
    if has_calls:
        return "tool_calls"
    if vendor in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "stop"
    if vendor in _LENGTH:
        return "length"
    if vendor in _ERROR:
        return "error"
    return "other"  # SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, LANGUAGE, IMAGE_*, OTHER


def final_text(parts: list[Any] | None) -> str | None:
    """The visible text of a final response (thought parts dropped), or None when it has none."""
    texts = [p.text for p in parts or [] if getattr(p, "text", None) and not getattr(p, "thought", False)]
    return "".join(texts) if texts else None


def declare_output_schema(llm_request: Any, schema: dict[str, Any]) -> None:
    """Show the model the spec's output schema in ADK's ``set_model_response`` tool.

    On the Gemini Developer API, an agent with tools and an ``output_schema`` answers through ADK's
    ``set_model_response`` tool. For a dict schema ADK 2.13 declares that tool as
    ``{"response": {"type": "object", "additionalProperties": true}}``: the schema itself never
    reaches the model. The tool reads ``args["response"]``, so declaring the schema under
    ``response`` keeps ADK's mechanism and tells the model the contract."""
    for tool in (llm_request.config.tools or []) if llm_request.config else []:
        for decl in getattr(tool, "function_declarations", None) or []:
            if decl.name == "set_model_response":
                decl.parameters = None
                decl.parameters_json_schema = {
                    "type": "object",
                    "properties": {"response": schema},
                    "required": ["response"],
                }


# --- what a Gemini function declaration can express -----------------------------------------------
#
# Tool parameters are sent verbatim as ``FunctionDeclaration.parameters_json_schema`` (REST
# ``parametersJsonSchema``). The emulator accepts anything, so the limits come from google-genai's own
# documentation (google-genai 2.34, ``google/genai/types.py``):
#
# - ``GenerateContentConfig.response_json_schema``: "While the full JSON Schema may be sent, not all
#   features are supported. Specifically, only the following properties are supported: $id, $defs,
#   $ref, $anchor, type, format, title, description, enum (for strings and numbers), items,
#   prefixItems, minItems, maxItems, minimum, maximum, anyOf, oneOf (interpreted the same as anyOf),
#   properties, additionalProperties, required. The non-standard propertyOrdering property may also be
#   set. [...] If $ref is set on a sub-schema, no other properties, except for than those starting as
#   a $, may be set."
# - ``types.Schema`` ("a select subset of an OpenAPI 3.0 schema object", the typed form of the same
#   parameters), which adds: default, example, nullable, pattern, minLength, maxLength,
#   minProperties, maxProperties.
# - ``FunctionDeclaration.parameters``: "Parameter names must start with a letter or an underscore
#   and must only contain chars a-z, A-Z, 0-9, or underscores with a maximum length of 64."
# - ``FunctionDeclaration.name``: "Must start with a letter or an underscore. Must be a-z, A-Z, 0-9,
#   or contain underscores, dots, colons and dashes, with a maximum length of 128."
#
# Anything else (allOf, not, if/then/else, const, exclusiveMinimum, multipleOf, uniqueItems,
# patternProperties, dependentRequired, …) would be ignored by Gemini: the model would be shown a
# looser contract than the ToolSpec's. portagent refuses such a spec for ``adk`` with the field path
# instead of sending it (the gateway would still reject bad arguments, but the model could not know).

GEMINI_JSON_SCHEMA_KEYWORDS: frozenset[str] = frozenset(
    {
        "$id",
        "$defs",
        "$ref",
        "$anchor",
        "type",
        "format",
        "title",
        "description",
        "enum",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "properties",
        "additionalProperties",
        "required",
        "propertyOrdering",
    }
)
"""JSON Schema keywords google-genai documents as supported (``response_json_schema`` docstring)."""

GEMINI_OPENAPI_SCHEMA_FIELDS: frozenset[str] = frozenset(
    {
        "additionalProperties",
        "$defs",
        "$ref",
        "anyOf",
        "default",
        "description",
        "enum",
        "example",
        "format",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "nullable",
        "pattern",
        "properties",
        "propertyOrdering",
        "required",
        "title",
        "type",
    }
)
"""Fields of google-genai's ``types.Schema`` (by alias; ``defs``/``ref`` written ``$defs``/``$ref``).
A test checks this list against the installed SDK."""

ANNOTATIONS: frozenset[str] = frozenset(
    {"$schema", "$comment", "examples", "deprecated", "readOnly", "writeOnly"}
)
"""Annotation-only keywords: they constrain nothing, so Gemini ignoring them changes no contract."""

TOOL_PARAMETER_KEYWORDS: frozenset[str] = (
    GEMINI_JSON_SCHEMA_KEYWORDS | GEMINI_OPENAPI_SCHEMA_FIELDS | ANNOTATIONS
)

_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "additionalProperties")


def _walk(schema: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every sub-schema (at schema positions only: property *names* are not keywords)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _SUBSCHEMA_MAPS:
        children = schema.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                yield from _walk(child, f"{path}.{key}.{name}")
    for key in _SUBSCHEMA_LISTS:
        children = schema.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                yield from _walk(child, f"{path}.{key}.{i}")
    for key in _SUBSCHEMA_ONE:
        yield from _walk(schema.get(key), f"{path}.{key}")


def tool_schema_problems(tool_name: str, schema: dict[str, Any], path: str = "input_schema") -> list[str]:
    """Why a ToolSpec cannot be declared to Gemini as it is (empty when it can)."""
    problems: list[str] = []
    if not _FUNCTION_NAME.match(tool_name):
        problems.append(f"name {tool_name!r}: Gemini function names must match {_FUNCTION_NAME.pattern}")
    for name in schema.get("properties") or {}:
        if not _PARAM_NAME.match(str(name)):
            problems.append(
                f"{path}.properties.{name}: Gemini parameter names must match {_PARAM_NAME.pattern}"
            )
    for where, sub in _walk(schema, path):
        for key in sub:
            if key not in TOOL_PARAMETER_KEYWORDS:
                problems.append(
                    f"{where}.{key}: JSON Schema keyword {key!r} is not supported by Gemini "
                    "function declarations"
                )
        enum = sub.get("enum")
        if isinstance(enum, list) and any(
            isinstance(v, bool) or not isinstance(v, str | int | float) for v in enum
        ):
            problems.append(f"{where}.enum: Gemini supports enum values that are strings or numbers only")
        if "$ref" in sub and any(not k.startswith("$") for k in sub):
            problems.append(f"{where}.$ref: Gemini allows no sibling keywords next to $ref (only '$…' ones)")
    return problems


def output_schema_problems(schema: dict[str, Any], path: str = "output_schema") -> list[str]:
    """Why an AgentSpec's ``output_schema`` cannot go through ADK's ``LlmAgent.output_schema``.

    ADK 2.13 takes the raw dict but google-genai converts it to ``types.Schema`` (the OpenAPI subset):
    any other key fails pydantic validation, ``enum`` must hold strings and ``type`` one string
    (a list such as ``["string", "null"]`` crashes the converter; use ``nullable: true``)."""
    problems: list[str] = []
    for where, sub in _walk(schema, path):
        for key in sub:
            if key not in GEMINI_OPENAPI_SCHEMA_FIELDS:
                problems.append(
                    f"{where}.{key}: keyword {key!r} is not supported by ADK's output_schema "
                    "(google-genai types.Schema)"
                )
        enum = sub.get("enum")
        if isinstance(enum, list) and not all(isinstance(v, str) for v in enum):
            problems.append(f"{where}.enum: ADK's output_schema supports string enum values only")
        if "type" in sub and not isinstance(sub["type"], str):
            problems.append(
                f"{where}.type: ADK's output_schema needs one type name (use nullable: true "
                "instead of a type list)"
            )
    return problems
